// kb-fake-llm SCRIPT.json PORT_FILE: serves the script (scripted_server.h) on
// 127.0.0.1, writes the port to PORT_FILE, and runs until SIGTERM/SIGINT or
// 300 s. For the command-line tests.
#include <csignal>
#include <cstdio>
#include <fstream>
#include <thread>

#include "scripted_server.h"

namespace {
volatile std::sig_atomic_t g_stop = 0;
void onSignal(int) { g_stop = 1; }
}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: kb-fake-llm SCRIPT.json PORT_FILE\n");
    return 2;
  }
  kb::test::ScriptedServer server(kb::readJsonFile(argv[1]));
  {
    std::ofstream out(std::string(argv[2]) + ".tmp");
    out << server.port() << "\n";
  }
  std::rename((std::string(argv[2]) + ".tmp").c_str(), argv[2]);
  std::signal(SIGTERM, onSignal);
  std::signal(SIGINT, onSignal);
  for (int i = 0; i < 3000 && !g_stop; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  server.stop();
  std::printf("%zu requests\n", server.requests().size());
  return 0;
}
