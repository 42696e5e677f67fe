// include: a solution includes only its own files, the interface header,
// CUDA's headers, Clang's CUDA wrappers and the C/C++ standard library, and
// none of the headers the policy refuses by name (torch/, ATen/, thrust/,
// <thread>, <fstream>, sockets, ...). Checked on the #include directive
// itself, so a refused header is named even when it does not exist here,
// and on the resolved path, so another spelling of it is refused too. #embed
// is refused.
#pragma once

#include "analyze/rule.h"

namespace kb::analyze {

class IncludeRule : public Rule {
 public:
  using Rule::Rule;
  void registerMatchers(clang::ast_matchers::MatchFinder& finder) override {}
  void registerPPCallbacks(clang::Preprocessor& pp) override;
  void check(const clang::ast_matchers::MatchFinder::MatchResult& result) override {}

  // Called by the preprocessor callback for every directive.
  void onInclude(clang::SourceLocation hash_loc, llvm::StringRef spelled, bool angled,
                 clang::OptionalFileEntryRef file, const clang::SourceManager& sm);

  void onEmbed(clang::SourceLocation hash_loc, llvm::StringRef spelled, bool angled,
               const clang::SourceManager& sm);

 private:
  bool allowedLocation(const std::string& path) const;
  bool deniedName(llvm::StringRef name) const;
};

}  // namespace kb::analyze
