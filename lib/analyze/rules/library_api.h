// library-api: CUDA libraries only as the policy allows: cuBLAS/cuBLASLt for
// GEMM, cuDNN for convolutions, nothing from cuFFT, cuRAND, cuSPARSE, NCCL and
// the rest. Handle and stream management belong to the harness.
#pragma once

#include "analyze/rule.h"

namespace kb::analyze {

class LibraryApiRule : public Rule {
 public:
  using Rule::Rule;
  void registerMatchers(clang::ast_matchers::MatchFinder& finder) override;
  void check(const clang::ast_matchers::MatchFinder::MatchResult& result) override;
};

// The library a function belongs to by its name prefix ("cublas", "cudnn",
// ... and "cuda-runtime" / "cuda-driver"), or "" for none.
std::string libraryOf(llvm::StringRef function_name, const StaticPolicy& policy);

}  // namespace kb::analyze
