// kbserve's whole run (docs/kbserve.md): the task store, the service, the
// sessions and the HTTP API put together; SIGTERM / SIGINT drain the
// accepted work and stop. tools/kbserve/main.cpp parses flags into a
// ServerConfig and calls runServer.
#pragma once

#include <filesystem>
#include <string>

#include "serve/http_api.h"
#include "serve/service.h"
#include "serve/sessions.h"

namespace kb::serve {

struct ServerConfig {
  std::string host = "127.0.0.1";
  int port = 8470;
  std::filesystem::path tasks;
  std::filesystem::path token_file;  // required on a non-loopback address
  ServiceOptions service;
  SessionOptions sessions;
  HttpOptions http;
  double drain_seconds = 600;        // SIGTERM: how long accepted work may take to finish
};

// "HOST:PORT" (IPv6 as [::1]:PORT) into the config. Throws kb::UsageError.
void parseListen(const std::string& text, ServerConfig& config);

// "auto" (every GPU nvidia-smi lists), "none", or "0,1,...".
std::vector<std::string> parseGpus(const std::string& text);

// --gpu-share: an integer 1-16, or "auto": as many evaluations per GPU as
// give each 16 GiB of the smallest GPU's memory, at most 4 (an H100 80GB or
// an H200: 4; a 40 GB card: 2; 24 GB: 1), and 1 where nvidia-smi cannot say.
// Throws kb::UsageError.
size_t parseGpuShare(const std::string& text, const std::vector<std::string>& gpus);

// Serves until SIGTERM or SIGINT; returns the exit code (docs/cli.md: 128 +
// the signal, 143 or 130, after a drain that finished everything; 3 when
// work was left journaled for the next start). Throws kb::UsageError for
// bad configuration (exit 2).
int runServer(ServerConfig config);

}  // namespace kb::serve
