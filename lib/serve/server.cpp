#include "serve/server.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <thread>

#include "core/error.h"
#include "core/file.h"
#include "core/gpu_info.h"
#include "eval/eval.h"

namespace fs = std::filesystem;

namespace kb::serve {

void parseListen(const std::string& text, ServerConfig& c) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon + 1 >= text.size())
    throw UsageError("--listen wants HOST:PORT, e.g. 127.0.0.1:8470 (got \"" + text + "\")");
  c.host = text.substr(0, colon);
  if (c.host.size() > 2 && c.host.front() == '[' && c.host.back() == ']') c.host = c.host.substr(1, c.host.size() - 2);
  try {
    c.port = std::stoi(text.substr(colon + 1));
  } catch (const std::exception&) {
    throw UsageError("--listen: the port in \"" + text + "\" is not a number");
  }
  if (c.port < 0 || c.port > 65535) throw UsageError("--listen: port " + std::to_string(c.port) + " is out of range");
  if (c.host.empty()) throw UsageError("--listen: give a host (127.0.0.1 for this machine only)");
}

std::vector<std::string> parseGpus(const std::string& text) {
  std::vector<std::string> out;
  if (text == "none" || text.empty()) return out;
  if (text == "auto") {
    for (int i = 0; i < 64; ++i) {
      if (!hasNvidiaGpu() || gpuName(i).empty()) break;
      out.push_back(std::to_string(i));
    }
    return out;
  }
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    std::string g = text.substr(start, end - start);
    if (g.empty() || g.find_first_not_of("0123456789") != std::string::npos)
      throw UsageError("--gpus wants auto, none or ordinals like 0,1 (got \"" + text + "\")");
    out.push_back(g);
    start = end + 1;
  }
  return out;
}

size_t parseGpuShare(const std::string& text, const std::vector<std::string>& gpus) {
  if (text != "auto") {
    size_t k = 0;
    if (text.empty() || text.size() > 2 || text.find_first_not_of("0123456789") != std::string::npos ||
        (k = std::stoul(text)) < 1 || k > 16)
      throw UsageError("--gpu-share wants auto or a number from 1 to 16 (got \"" + text + "\")");
    return k;
  }
  // Each of K evaluations' workers (two CUDA contexts and their tensors) gets
  // 16 GiB: past that, a neighbour's allocations would often leave one
  // without memory, and every such evaluation runs its GPU stages twice.
  constexpr long kMiBPerEvaluation = 16 * 1024;
  constexpr size_t kMostShare = 4;  // measured (2026-12-07, H100): 2697 an hour against 1903 with 1
  if (gpus.empty()) return 1;
  long smallest = -1;
  for (const std::string& g : gpus) {
    std::optional<long> mib = gpuMemoryMiB(std::stoi(g));
    if (!mib) return 1;  // no evidence: one evaluation per GPU
    smallest = smallest < 0 ? *mib : std::min(smallest, *mib);
  }
  return std::clamp<size_t>(static_cast<size_t>(smallest / kMiBPerEvaluation), 1, kMostShare);
}

namespace {

std::string readToken(const fs::path& file) {
  std::string t = readFile(file);
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ')) t.pop_back();
  if (t.size() < 16) throw UsageError("the token in " + file.string() + " is shorter than 16 characters");
  return t;
}

}  // namespace

int runServer(ServerConfig c) {
  if (!c.token_file.empty()) c.http.token = readToken(c.token_file);
  if (!isLoopback(c.host) && c.http.token.empty())
    throw UsageError("--listen " + c.host + " is reachable from other machines: give --token-file (a bearer token every request must carry)");
  size_t http_threads = std::max<size_t>(4, c.http.threads);
  if (c.http.websocket.max_connections >= http_threads)
    throw UsageError("--ws-connections " + std::to_string(c.http.websocket.max_connections) + " must be below --http-threads " +
                     std::to_string(http_threads) + ": each WebSocket holds a thread, and HTTP needs the rest");
  c.http.websocket.max_message_bytes = c.http.max_body_bytes;
  c.http.guide = c.sessions.guide;
  c.http.interface_header = c.sessions.interface_header;

  // SIGINT / SIGTERM go to one thread that waits for them (sigwait), so that
  // draining runs as ordinary code; every thread made from here on inherits
  // the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  ::signal(SIGPIPE, SIG_IGN);  // a client gone mid-answer is an error return, not a death

  TaskStore tasks(c.tasks);
  Service service(tasks, c.service);
  Sessions sessions(service, c.sessions);
  HttpApi api(service, sessions, c.http);
  int port = api.bind(c.host, c.port);
  std::string shown = c.host.find(':') != std::string::npos ? "[" + c.host + "]" : c.host;
  std::string gpus = std::to_string(c.service.gpus.size()) + " GPUs";
  if (!c.service.gpus.empty()) gpus += ", " + std::to_string(c.service.gpu_share) + " evaluations on each (--gpu-share)";
  std::fprintf(stderr, "kbserve: listening on http://%s:%d (%zu tasks, %zu CPU slots, %s, state in %s; %s)\n",
               shown.c_str(), port, tasks.list().size(), c.service.cpu_slots, gpus.c_str(),
               c.service.state_dir.c_str(),
               WebSocketServer::available() ? "OpenEnv WebSocket sessions at /ws" : "no WebSocket: built without Boost.Beast");
  if (!eval::StaticChecker::available())
    std::fprintf(stderr,
                 "kbserve: warning: built without the Clang checker: no static stage runs, and the compilers read "
                 "what the sources name with this server's file access; serve trusted clients only (docs/kbserve.md)\n");
  std::fflush(stderr);

  int code = 0;
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    std::fprintf(stderr, "kbserve: %s: draining (no new evaluations; up to %.0f s for the accepted ones)\n",
                 sig == SIGTERM ? "SIGTERM" : "SIGINT", c.drain_seconds);
    bool all = service.drain(c.drain_seconds);
    const char* name = sig == SIGTERM ? "SIGTERM" : "SIGINT";
    if (!all) {
      std::fprintf(stderr, "kbserve: stopped by %s: the drain timed out; what is left stays in the journal for the next start\n", name);
      code = 3;
    } else {
      std::fprintf(stderr, "kbserve: stopped by %s: drained, every accepted evaluation finished\n", name);
      code = 128 + sig;
    }
    api.stop();
  });
  bool ok = api.listen();
  if (!ok) ::kill(::getpid(), SIGTERM);  // wakes the waiter
  waiter.join();
  if (!ok && code == 0) return 3;
  return code;
}

}  // namespace kb::serve
