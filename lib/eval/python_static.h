// The static stage of a Python-format solution (python_static.cpp).
#pragma once

#ifdef KB_HAVE_CLANG
#include "analyze/analyze.h"
#include "analyze/policy.h"
#include "solution/solution.h"

namespace kb::eval {

// scripts/pycheck.py over the solution's .py files, at the severities of
// the policy's python_rules (missing: error); then the Clang rules, under
// the policy's extension policy, over the C++ and CUDA the solution builds
// into torch extensions: each load_inline call's generated main.cpp and
// cuda.cu (findings mapped back to the .py file's lines), a workspace's
// binding.cpp and kernels/ (docs/rules/README.md "Torch extensions").
// `options` are the Clang checker's (arch, CUDA, cache). Never throws: a
// checker that cannot run is infra_failed.
analyze::StaticResult checkPythonSolution(const solution::Solution& solution, const analyze::StaticPolicy& policy,
                                          const analyze::CheckOptions& options);

}  // namespace kb::eval
#endif
