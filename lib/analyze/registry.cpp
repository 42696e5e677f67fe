// The list of rules: adding one touches this file, rules/<id>.cpp,
// docs/rules/<id>.md and tests/analyze/cases/<id>/.
#include "analyze/rule.h"
#include "analyze/rules/banned_api.h"
#include "analyze/rules/compiler_conditional.h"
#include "analyze/rules/device_library.h"
#include "analyze/rules/extern_symbol.h"
#include "analyze/rules/include.h"
#include "analyze/rules/interpose.h"
#include "analyze/rules/launch_stream.h"
#include "analyze/rules/library_api.h"
#include "analyze/rules/missing_entry.h"
#include "analyze/rules/mutable_global.h"
#include "analyze/rules/skipped_branch.h"
#include "analyze/rules/torch_api.h"

namespace kb::analyze {

const std::vector<RuleInfo>& allRules() {
  static const std::vector<RuleInfo> rules = {
      {"torch-api", "Nothing from torch, ATen or c10: the solution must do the work itself."},
      {"extern-symbol", "Every used symbol is defined in the solution or declared by an allowed header."},
      {"stream-create", "No new streams, graphs or handle rebinding: work goes on the harness's stream."},
      {"launch-stream", "Kernels and async copies go on ctx.stream(), never on a default stream."},
      {"host-thread", "No host threads or OpenMP: nothing may run after the call returns."},
      {"process", "No starting, signalling or ending processes, and no changing process- or thread-wide settings (scheduling, affinity, the floating-point environment)."},
      {"file-io", "No file system access."},
      {"network", "No network access."},
      {"dynamic-loading", "No dlopen/dlsym or driver entry-point lookups: they bypass every static rule."},
      {"environment", "No reading or changing the environment."},
      {"raw-syscall", "No raw system calls or host inline assembly."},
      {"memory-protect", "No changing memory protection: patching loaded code (the timer, the harness) bypasses every rule."},
      {"device-control", "No device, context or timer-event control: the harness owns them."},
      {"raw-alloc", "No raw device allocation: use ctx.output(), ctx.scratch(), ctx.create_state()."},
      {"interpose", "No definitions that stand in for CUDA, library or libc symbols, no load-time code."},
      {"mutable-global", "No mutable static state that could carry results across calls."},
      {"library-api", "cuBLAS/cuBLASLt for GEMM only, cuDNN for convolution only, no other CUDA library."},
      {"device-library", "No device-wide library algorithms (thrust, cub::Device*)."},
      {"include", "Only the solution's, the interface's, CUDA's and the standard library's headers."},
      {"symlink", "No symbolic links that leave the solution directory."},
      {"compiler-conditional", "No #if on the compiler's identity: the code nvcc builds is the code that was checked."},
      {"skipped-branch", "No code in a preprocessor branch the checker skipped under a condition a compiler may answer differently."},
      {"missing-entry", "The solution defines its entry point with KB_FORWARD(ctx) { ... }."},
      {"parser-limit", "A note, never a violation: Clang could not parse code the real compiler may accept; the rest is judged."},
  };
  return rules;
}

std::vector<std::unique_ptr<Rule>> makeRules(CheckContext& ctx) {
  const StaticPolicy& p = ctx.policy();
  std::vector<std::unique_ptr<Rule>> rules;
  auto on = [&](const char* id) { return p.severityOf(id) != "off"; };
  auto banned = [&](const char* id) {
    auto it = p.banned.find(id);
    return it == p.banned.end() ? BannedApi{} : it->second;
  };
  if (on("torch-api")) rules.push_back(std::make_unique<TorchApiRule>("torch-api", ctx));
  if (on("extern-symbol")) rules.push_back(std::make_unique<ExternSymbolRule>("extern-symbol", ctx));
  if (on("stream-create"))
    rules.push_back(std::make_unique<StreamCreateRule>("stream-create", ctx, banned("stream-create")));
  for (const char* id : {"process", "file-io", "network", "dynamic-loading",
                         "environment", "device-control", "memory-protect"})
    if (on(id)) rules.push_back(std::make_unique<BannedApiRule>(id, ctx, banned(id)));
  if (on("raw-alloc")) rules.push_back(std::make_unique<RawAllocRule>("raw-alloc", ctx, banned("raw-alloc")));
  if (on("host-thread"))
    rules.push_back(std::make_unique<HostThreadRule>("host-thread", ctx, banned("host-thread")));
  if (on("raw-syscall"))
    rules.push_back(std::make_unique<RawSyscallRule>("raw-syscall", ctx, banned("raw-syscall")));
  if (on("launch-stream")) rules.push_back(std::make_unique<LaunchStreamRule>("launch-stream", ctx));
  if (on("interpose")) rules.push_back(std::make_unique<InterposeRule>("interpose", ctx));
  if (on("mutable-global")) rules.push_back(std::make_unique<MutableGlobalRule>("mutable-global", ctx));
  if (on("library-api")) rules.push_back(std::make_unique<LibraryApiRule>("library-api", ctx));
  if (on("device-library")) rules.push_back(std::make_unique<DeviceLibraryRule>("device-library", ctx));
  if (on("include")) rules.push_back(std::make_unique<IncludeRule>("include", ctx));
  if (on("compiler-conditional"))
    rules.push_back(std::make_unique<CompilerConditionalRule>("compiler-conditional", ctx));
  if (on("skipped-branch")) rules.push_back(std::make_unique<SkippedBranchRule>("skipped-branch", ctx));
  if (on("missing-entry")) rules.push_back(std::make_unique<MissingEntryRule>("missing-entry", ctx));
  return rules;
}

}  // namespace kb::analyze
