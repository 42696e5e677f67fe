// kbserve: the evaluation as an HTTP/JSON service that RL engines call
// (docs/kbserve.md). A thin driver over lib/serve: flags in, runServer().
#include <CLI/CLI.hpp>

#include "../cli_parse.h"
#include "core/paths.h"
#include "kb_config.h"
#include "serve/server.h"

using namespace kb;

int main(int argc, char** argv) {
  CLI::App app{
      "kbserve: the environment as a service. Serves the task bundles under --tasks over HTTP/JSON:\n"
      "evaluations (static -> build -> verify -> profile, kbcheck's and kbprof's reports and lib/reward's\n"
      "reward), agent sessions shaped like OpenEnv (reset / step / close, over HTTP and over OpenEnv's own\n"
      "WebSocket protocol at /ws), reward endpoints in OpenRLHF's and slime's shapes, /healthz, /readyz and\n"
      "Prometheus /metrics. Builds run on a bounded CPU pool\n"
      "with the content-keyed build cache; verification and timing on exclusive GPU leases. Accepted work\n"
      "is journaled in --state-dir: after a crash and a restart every evaluation is finished or answered\n"
      "infra_error, never dropped. SIGTERM drains. docs/kbserve.md is the API.\n\n"
      "  kbserve --listen 127.0.0.1:8470 --tasks testdata/tasks\n"
      "  curl -s localhost:8470/v1/evaluations?wait=true -H 'Content-Type: application/json' -d '{\"task\": \"testdata/linear_relu\", \"device\": \"cpu\",\n"
      "       \"files\": {\"forward.cpp\": \"...\"}}'",
      "kbserve"};
  tools::setVersionFlag(app, "kbserve");
  serve::ServerConfig c;
  std::string listen = "127.0.0.1:8470", gpus = "auto", gpu_share = "auto", state_dir, guide, cache_dir, policy;
  size_t max_request_mib = 16;
  app.add_option("--listen", listen, "HOST:PORT to serve on (default 127.0.0.1:8470; port 0: any free port, printed "
                                     "on stderr). An address other than loopback needs --token-file");
  app.add_option("--tasks", c.tasks, "Directory of task bundles (kbsynth's layout; ids from task.json)")
      ->required()
      ->check(CLI::ExistingDirectory);
  app.add_option("--state-dir", state_dir, "The journal and the evaluations' directories (default ~/.cache/kernelbench-rl/serve)");
  app.add_option("--token-file", c.token_file, "A file holding the bearer token every request must carry (>= 16 characters)")
      ->check(CLI::ExistingFile);
  app.add_option("--cpu-slots", c.service.cpu_slots, "Static checks, builds and CPU verifications at once")
      ->capture_default_str()
      ->check(CLI::Range(1, 512));
  app.add_option("--gpus", gpus, "GPUs to lease: auto (every GPU nvidia-smi lists), none, or ordinals 0,1,...")
      ->capture_default_str();
  app.add_option("--gpu-share", gpu_share,
                 "Evaluations holding one GPU at once: their untimed GPU work (device set-up, verify, the reference's "
                 "checks) runs side by side, each profile's baselines and candidate with the GPU to themselves. "
                 "auto: 16 GiB of GPU memory each, at most 4 (4 on an H100 or H200); 1: one evaluation per GPU, the "
                 "lease exclusive throughout; up to 16 (docs/kbserve.md, Scheduling)")
      ->capture_default_str();
  app.add_option("--batch-max", c.service.batch_max,
                 "CPU verifications of one task run together on one reference worker, at most (1: never)")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_option("--queue-limit", c.service.queue_limit, "Evaluations accepted and not finished at most; beyond: 429 with Retry-After")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  app.add_option("--keep-results", c.service.keep_results, "Finished evaluations kept to answer GET (memory and journal)")
      ->capture_default_str();
  app.add_option("--max-request-mib", max_request_mib, "A request body at most (413 beyond)")->capture_default_str();
  app.add_option("--http-threads", c.http.threads, "Connections served at once (a ?wait=true request holds one)")
      ->capture_default_str();
  app.add_option("--verify-timeout", c.service.verify_timeout_seconds, "Seconds a verification worker may run")
      ->capture_default_str();
  app.add_option("--profile-budget-s", c.service.profile_budget_seconds, "Timed rounds of one profile, seconds (kbprof --budget-s)")
      ->capture_default_str();
  app.add_option("--compile-baseline", c.service.compile_baseline,
                 "Which torch.compile figure a profile times (kbprof --compile-baseline): auto (the task's "
                 "AOTInductor package, else torch.compile in Python in the worker: the first profile of such a task "
                 "compiles, then the figure is cached), aoti (the package or no figure: rewards that need one are "
                 "then excluded), python (always Python's), none. Never a package build in a GPU lease: kbsynth "
                 "import --compiled cuda builds them")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "aoti", "python", "none"}));
  bool late_start = false;
  app.add_flag("--late-start", late_start,
               "Start a GPU profile's workers inside its GPU lease (kbprof --late-start), not before its build held "
               "before CUDA until the lease names their GPU (the default: the lease then holds no process start-up)");
  app.add_flag("--verify-in-profile", c.service.verify_in_profile,
               "On cuda, run verify and profile asked together as one profile whose correctness seeds are the "
               "verification: one worker pair in the GPU lease instead of two, but a candidate that hangs holds the "
               "GPU for the profile's wall limit (300 s) instead of --verify-timeout");
  app.add_option("--arch", c.service.arch, "nvcc's target for CUDA solutions")->capture_default_str();
  app.add_option("--cache-dir", cache_dir, "The build cache (default ~/.cache/kernelbench-rl/build)");
  app.add_option("--policy", policy,
                 "The static checker's policy: a file, or a name: paper (the default, policy/default.json) or "
                 "kernelbench (torch operations allowed in a Python ModelNew)");
  app.add_option("--guide", guide, "The agent guide for sessions (default docs/agent-guide.md)");
  app.add_option("--max-sessions", c.sessions.max_sessions, "Agent sessions open at most")->capture_default_str();
  app.add_option("--session-idle-s", c.sessions.idle_seconds, "A session untouched this long is closed")->capture_default_str();
  uint64_t session_disk_mib = c.sessions.workspace.bytes >> 20;
  app.add_option("--session-disk-mib", session_disk_mib,
                 "Disk a session's workspace may take (its bash is stopped past it; 0: no bound). Also at most "
                 "100000 files")->capture_default_str();
  auto* ws_idle = app.add_option("--ws-idle-s", c.http.websocket.idle_seconds,
                                 "A WebSocket connection (/ws) with no message this long is closed (default: --session-idle-s)");
  app.add_option("--ws-connections", c.http.websocket.max_connections,
                 "WebSocket connections (/ws) open at once, below --http-threads (each holds a thread); 503 beyond")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app.add_flag("--allow-no-static", c.service.limits.allow_no_static,
               "Let a request leave \"static\" out of its stages (trusted clients only: the compilers read what the "
               "sources name with this server's file access, and the static rules are what refuse that); off, every "
               "build is checked first");
  bool no_hide = false;
  app.add_flag("--no-hide-state", no_hide,
               "For tests and debugging only: let candidate workers read the state directory, the build cache and the other workers' folders "
               "(other clients' files)");
  app.add_option("--drain-s", c.drain_seconds, "On SIGTERM, seconds the accepted work may take to finish")->capture_default_str();
  tools::durationFlags(app, {"--verify-timeout", "--profile-budget-s", "--session-idle-s", "--ws-idle-s", "--drain-s"});
  if (auto rc = tools::parseOrExit(app, argc, argv, "kbserve")) return *rc;
  return tools::runGuarded("kbserve", [&] {
    serve::parseListen(listen, c);
    c.service.gpus = serve::parseGpus(gpus);
    c.service.gpu_share = serve::parseGpuShare(gpu_share, c.service.gpus);
    c.service.state_dir = state_dir.empty() ? cacheRoot() / "serve" : std::filesystem::path(state_dir);
    c.service.build_cache = cache_dir;
    c.service.hide_state_from_workers = !no_hide;
    c.service.early_workers = !late_start;
    c.service.static_policy = policy;
    c.http.max_body_bytes = max_request_mib << 20;
    if (ws_idle->count() == 0) c.http.websocket.idle_seconds = c.sessions.idle_seconds;
    c.sessions.workspace.bytes = session_disk_mib << 20;
    c.sessions.guide = guide.empty() ? dataPath("docs/agent-guide.md") : std::filesystem::path(guide);
    c.sessions.interface_header = dataPath("include/kb/solution.h");
    return serve::runServer(c);
  });
}
