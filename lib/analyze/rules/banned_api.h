// Rules that ban a list of APIs named in the policy file: calling one, taking
// its address, constructing one of its classes or reading one of its
// variables. Matching is on the declaration the code resolves to, so macros,
// `using`, aliases, ADL and function pointers do not hide a call.
#pragma once

#include <memory>

#include <llvm/Support/Regex.h>

#include "analyze/rule.h"

namespace kb::analyze {

class BannedApiRule : public Rule {
 public:
  BannedApiRule(std::string id, CheckContext& ctx, BannedApi api);
  void registerMatchers(clang::ast_matchers::MatchFinder& finder) override;
  void check(const clang::ast_matchers::MatchFinder::MatchResult& result) override;

 protected:
  BannedApi api_;
  std::vector<std::string> plain_functions_;  // without a leading "::"
  std::vector<std::shared_ptr<llvm::Regex>> name_patterns_, string_patterns_, header_patterns_;

 private:
  // The header of `headers` that declares `fn` ("/usr/include/unistd.h"),
  // or "" when none does or the function is another rule's or excepted.
  std::string familyHeader(const clang::FunctionDecl* fn, const clang::SourceManager& sm);
  // The name or asm label of a referenced declaration matches name_patterns.
  bool matchesPattern(const clang::NamedDecl* d, std::string* shown) const;
};

// stream-create: the banned list, plus the functions of
// `ctx_stream_functions` (CUDA graph capture and replay), allowed only when
// their stream argument is ctx.stream(): that call itself, or a local
// variable initialised from it and never assigned again.
class StreamCreateRule : public BannedApiRule {
 public:
  using BannedApiRule::BannedApiRule;
  void registerMatchers(clang::ast_matchers::MatchFinder& finder) override;
  void check(const clang::ast_matchers::MatchFinder::MatchResult& result) override;
};

// host-thread: the banned list plus OpenMP directives.
class HostThreadRule : public BannedApiRule {
 public:
  using BannedApiRule::BannedApiRule;
  void registerMatchers(clang::ast_matchers::MatchFinder& finder) override;
  void check(const clang::ast_matchers::MatchFinder::MatchResult& result) override;
};

// raw-syscall: the banned list plus inline assembly in host code and
// file-scope asm (device code may use inline PTX).
class RawSyscallRule : public BannedApiRule {
 public:
  using BannedApiRule::BannedApiRule;
  void registerMatchers(clang::ast_matchers::MatchFinder& finder) override;
  void check(const clang::ast_matchers::MatchFinder::MatchResult& result) override;
};

// raw-alloc: the banned list plus the device-side heap (malloc, free,
// new and delete in __device__ or __global__ code): its blocks outlive the
// kernel, and a block freed by one call is handed back, contents and all,
// to the next.
class RawAllocRule : public BannedApiRule {
 public:
  using BannedApiRule::BannedApiRule;
  void registerMatchers(clang::ast_matchers::MatchFinder& finder) override;
  void check(const clang::ast_matchers::MatchFinder::MatchResult& result) override;
};

}  // namespace kb::analyze
