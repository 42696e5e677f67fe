// The static stage of a Python-format solution (python_static.cpp).
#pragma once

#ifdef KB_HAVE_CLANG
#include "analyze/analyze.h"
#include "analyze/policy.h"
#include "solution/solution.h"

namespace kb::eval {

// scripts/pycheck.py over the solution's .py files, at the severities of
// the policy's python_rules (missing: error). Never throws: a checker that
// cannot run is infra_failed.
analyze::StaticResult checkPythonSolution(const solution::Solution& solution, const analyze::StaticPolicy& policy);

}  // namespace kb::eval
#endif
