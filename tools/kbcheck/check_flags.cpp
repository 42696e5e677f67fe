// The flags kbcheck's build, verify and combined run share (build_verify.h),
// kept apart from the commands themselves.
#include "build_verify.h"

#include "../cli_parse.h"

namespace kb::tools {

void addBuildFlags(CLI::App& cmd, CheckFlags& c) {
  cmd.add_option("--arch", c.arch, "GPU architecture for nvcc and NVRTC (sm_90, sm_90a, sm_80, ...)")
      ->capture_default_str()
      ->check(archValidator());
  cmd.add_option("-j,--jobs", c.jobs, "Translation units compiled at once (0: one per core)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1024));
  cmd.add_option("--cache-dir", c.cache_dir,
                 "Build cache (default $KB_CACHE_DIR/build or ~/.cache/kernelbench-rl/build)");
  cmd.add_flag("--no-cache", c.no_cache, "Build even if the cache has this solution, and do not store it");
  cmd.add_option("--nvcc-flag", c.nvcc_flags, "Extra nvcc flag (repeatable; part of the cache key)");
  cmd.add_option("--cxx-flag", c.cxx_flags, "Extra host compiler flag (repeatable; part of the cache key)");
  cmd.add_option("--build-timeout", c.build_timeout, "Seconds one compiler run may take")
      ->capture_default_str()
      ->check(CLI::Range(0.001, 86400.0));
  cmd.add_option("--max-errors", c.max_errors, "Compiler diagnostics end after this many errors")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
}

void addVerifyFlags(CLI::App& cmd, CheckFlags& c) {
  cmd.add_option("--seeds", c.seeds, "Correctness seeds, comma-separated, e.g. 0,1,2 (default: the task's, then domain draws of up to 3 of them; "
                 "a domain draw is its seed + 2^63, e.g. 9223372036854775808 for seed 0's)")
      ->type_name("LIST");
  cmd.add_option("--precision", c.precision,
                 "Judge by this precision contract instead of the task's (docs/task-format.md): strict "
                 "(atol = rtol = 1e-4) or paper (1e-2)")
      ->check(CLI::IsMember({"strict", "paper"}));
  cmd.add_option("--atol", c.atol, "Absolute tolerance (default: the contract's)")->check(CLI::Range(0.0, 1e30));
  cmd.add_option("--rtol", c.rtol, "Relative tolerance (default: the contract's)")->check(CLI::Range(0.0, 1e30));
  cmd.add_option("--timeout", c.timeout, "Wall-clock seconds for the candidate's worker, start-up included")
      ->capture_default_str()
      ->check(CLI::Range(0.001, 86400.0));
  cmd.add_option("--cpu-time", c.cpu_time, "CPU seconds for the worker (default: the timeout)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{86400}));
  cmd.add_option("--memory-limit", c.memory_mib, "Host memory (MiB) the worker may use above its start-up (0: no limit)")
      ->capture_default_str();
  cmd.add_option("--scratch-limit", c.scratch_mib, "Scratch memory (MiB) one call may allocate")
      ->capture_default_str();
  cmd.add_flag("--keep-workdir", c.keep_workdir, "Keep the worker's directory (request, result channel)");
  cmd.add_flag("--unsafe-no-seccomp", c.no_seccomp, "Debugging only: run the candidate without seccomp");
  cmd.add_flag("--unsafe-no-landlock", c.no_landlock, "Debugging only: run the candidate without Landlock");
  cmd.add_flag("--allow-open-rdwr", c.allow_open_rdwr,
               "Let the worker open existing files read-write where Landlock confines writes to its directory (not honoured without Landlock)");
}

void addOutputFlags(CLI::App& cmd, CheckFlags& c) {
  cmd.add_option("--json", c.json, "Write the JSON report to FILE ('-': one line on stdout, instead of the text)")
      ->type_name("FILE");
  cmd.add_flag("-q,--quiet", c.quiet, "No text report");
}

}  // namespace kb::tools
