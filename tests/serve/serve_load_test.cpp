// A bounded load on a real kbserve (issue 36): 32 clients submit 1024 CPU
// evaluations with ?wait=true, a correct and a wrong solution alternating.
// Asserted: every evaluation answered once, with its own id and the verdict
// its solution deserves, and the server's count agrees (none lost, none
// duplicated). Printed, not asserted: latency percentiles and throughput.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <set>

#include "server_process.h"

using kb::Json;

TEST(ServeLoad, ThousandEvaluationsFromThirtyTwoClients) {
  const int clients = 32, per_client = 32;
  std::filesystem::path state = std::filesystem::path(KB_TEST_WORK_DIR) / "load" / "state";
  std::filesystem::remove_all(state.parent_path());
  kbtest::ServerProcess server(state, {"--cpu-slots", "2", "--queue-limit", "256"});
  const std::string ok = kbtest::solutionSource("ok_linear_relu"), wrong = kbtest::solutionSource("wrong_result");
  std::mutex mu;
  std::vector<double> latencies;
  std::vector<std::string> failures;  // the first few, for the failure message
  std::set<std::string> ids;
  std::atomic<int> mismatched{0}, failed{0}, retried{0}, reconnected{0};
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < clients; ++t)
    threads.emplace_back([&, t] {
      auto c = server.client(600);
      for (int i = 0; i < per_client; ++i) {
        bool good = (t + i) % 2 == 0;
        Json body = kbtest::evaluationBody("testdata/linear_relu", good ? ok : wrong,
                                           {{"idempotency_key", "load-" + std::to_string(t) + "-" + std::to_string(i)}});
        auto start = std::chrono::steady_clock::now();
        auto post = [&] { return c.Post("/v1/evaluations?wait=true&timeout_s=600", body.dump(), "application/json"); };
        httplib::Result r = post();
        for (int attempt = 0; attempt < 50 && (!r || r->status == 429); ++attempt) {
          if (!r) {
            // The connection went (a kept-alive one the server closed while
            // this client was starved of CPU): resubmit with the same key,
            // as every client must; the key makes it the same evaluation.
            if (++reconnected, attempt >= 5) break;
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
          } else {
            ++retried;
            std::this_thread::sleep_for(std::chrono::seconds(std::stoi(r->get_header_value("Retry-After"))));
          }
          r = post();
        }
        double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (!r || r->status != 200) {
          ++failed;
          std::lock_guard lock(mu);
          if (failures.size() < 5)
            failures.push_back(!r ? "no response: " + httplib::to_string(r.error())
                                  : "HTTP " + std::to_string(r->status) + ": " + r->body.substr(0, 300));
          continue;
        }
        Json ev = Json::parse(r->body);
        if (ev["status"] != (good ? "ok" : "incorrect")) ++mismatched;
        std::lock_guard lock(mu);
        latencies.push_back(took);
        ids.insert(ev["id"].get<std::string>());
      }
    });
  for (auto& th : threads) th.join();
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const size_t total = clients * per_client;
  EXPECT_EQ(failed.load(), 0) << [&] {
    std::string all;
    for (const auto& f : failures) all += "\n  " + f;
    return all;
  }();
  EXPECT_EQ(mismatched.load(), 0);
  EXPECT_EQ(ids.size(), total);  // one evaluation each, none shared
  auto m = server.client().Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_NE(m->body.find("kbserve_evaluations_accepted_total " + std::to_string(total) + "\n"), std::string::npos) << m->body;
  // Submitting the same keys again gives the same evaluations, not new ones.
  auto c = server.client();
  for (int t = 0; t < 4; ++t) {
    Json body = kbtest::evaluationBody("testdata/linear_relu", t % 2 == 0 ? ok : wrong,
                                       {{"idempotency_key", "load-" + std::to_string(t) + "-0"}});
    auto r = c.Post("/v1/evaluations", body.dump(), "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_TRUE(ids.count(Json::parse(r->body)["id"].get<std::string>()));
  }
  std::sort(latencies.begin(), latencies.end());
  auto pct = [&](double p) { return latencies.empty() ? 0.0 : latencies[std::min(latencies.size() - 1, static_cast<size_t>(p * latencies.size()))]; };
  std::printf("kbserve load: %zu evaluations from %d clients in %.1f s (%.1f/s, %.0f per hour on 2 CPU slots); "
              "latency p50 %.2f s, p99 %.2f s, max %.2f s; 429 retries %d; resubmitted after a lost connection %d\n",
              latencies.size(), clients, wall, latencies.size() / wall, 3600 * latencies.size() / wall, pct(0.5), pct(0.99),
              latencies.empty() ? 0.0 : latencies.back(), retried.load(), reconnected.load());
}
