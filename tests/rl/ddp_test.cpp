// Data parallelism: kbtrain in 2 processes (gloo, torchrun-style env) on
// halves of each batch ends with the same weights as 1 process on the whole
// batch, within 1e-6, for rft (NLL) and ppo (actor and critic); and training
// moved the weights in both (else "equal" would prove nothing).
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "llm/model.h"
#include "toy/task.h"

namespace fs = std::filesystem;
using namespace kb;

namespace {

int freePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

double maxDiff(const fs::path& a, const fs::path& b, const std::string& file) {
  std::map<std::string, at::Tensor> ta;
  for (auto& [n, t] : llm::readTensors(a / file)) ta[n] = t;
  double m = 0;
  size_t seen = 0;
  for (auto& [n, t] : llm::readTensors(b / file)) {
    EXPECT_TRUE(ta.count(n)) << n;
    if (!ta.count(n)) continue;
    m = std::max(m, (ta[n].to(at::kDouble) - t.to(at::kDouble)).abs().max().item<double>());
    ++seen;
  }
  EXPECT_EQ(seen, ta.size());
  return m;
}

class Ddp : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() / ("kb-ddp-" + std::to_string(getpid()));
    fs::create_directories(dir);
    model = fs::path(std::getenv("KB_SOURCE_ROOT")) / "testdata/policy/qwen2-tiny";
    kbtrain = std::getenv("KBTRAIN");
    // 12 episodes: for 6 tasks a correct answer (+1) and a wrong one (-1).
    std::ofstream out(dir / "traj.jsonl");
    for (uint64_t s = 0; s < 6; ++s) {
      const toy::ToyTask t = toy::makeToyTask(s);
      out << toy::toyTrajectory(t, 0, toy::toyDemonstration(t), Json::object(), "train").dump() << '\n';
      out << toy::toyTrajectory(t, 1, "y[i] = x[i] * 99.0f;", Json::object(), "train").dump() << '\n';
    }
  }
  void TearDown() override { fs::remove_all(dir); }

  // Runs `args` once alone and once as 2 processes; returns the two out dirs.
  std::pair<fs::path, fs::path> runBoth(const std::string& name, const std::string& args) {
    const fs::path one = dir / (name + "-1"), two = dir / (name + "-2");
    // --shards 2 in both runs: the same micro-batches whatever the process count.
    const std::string base = "'" + kbtrain + "' " + args + " --shards 2 --no-progress ";
    const std::string single = "env -u WORLD_SIZE -u RANK " + base + "--out '" + one.string() + "' > /dev/null";
    EXPECT_EQ(std::system(single.c_str()), 0) << single;
    const std::string env = "WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(freePort()) + " ";
    const std::string pair = "bash -c \"" + env + "RANK=0 LOCAL_RANK=0 " + base + "--out '" + two.string() +
                             "' > /dev/null & p=\\$!; " + env + "RANK=1 LOCAL_RANK=1 " + base + "--out '" +
                             two.string() + "' > /dev/null; r=\\$?; wait \\$p && exit \\$r\"";
    EXPECT_EQ(std::system(pair.c_str()), 0) << pair;
    return {one, two};
  }

  fs::path dir, model;
  std::string kbtrain;
};

}  // namespace

TEST_F(Ddp, RftTwoProcessesMatchOne) {
  auto [one, two] = runBoth("rft", "rft '" + (dir / "traj.jsonl").string() + "' --model '" + model.string() +
                                       "' --keep-no-reward --min-reward -10 --batch-size 6 --micro-batch 2 "
                                       "--epochs 2 --lr 1e-3 --warmup-steps 2 --weight-decay 0.01");
  const double d = maxDiff(one, two, "model.safetensors");
  EXPECT_LT(d, 1e-6);
  // And training moved the weights (the comparison is not vacuous).
  const fs::path orig = dir / "orig";
  llm::saveModel(llm::loadModel(model), orig);
  EXPECT_GT(maxDiff(one, orig, "model.safetensors"), 1e-4);
  std::printf("rft: max |w_1proc - w_2proc| = %.3g\n", d);
}

TEST_F(Ddp, PpoTwoProcessesMatchOne) {
  auto [one, two] = runBoth("ppo", "ppo '" + (dir / "traj.jsonl").string() + "' --model '" + model.string() +
                                       "' --critic '" + model.string() +
                                       "' --batch-size 4 --micro-batch 1 --epochs 2 --lr 1e-3 --kl-coef 0.1 "
                                       "--reference '" + model.string() + "'");
  const double actor = maxDiff(one, two, "model.safetensors");
  const double critic = maxDiff(one / "critic", two / "critic", "model.safetensors");
  const double head = maxDiff(one / "critic", two / "critic", "value_head.safetensors");
  EXPECT_LT(actor, 1e-6);
  EXPECT_LT(critic, 1e-6);
  EXPECT_LT(head, 1e-6);
  // PPO moved the actor, the critic's backbone and its value head (which
  // starts at 0 from a policy checkpoint), in both runs.
  const fs::path orig = dir / "orig";
  llm::saveModel(llm::loadModel(model), orig);
  const double actor_moved = std::min(maxDiff(one, orig, "model.safetensors"), maxDiff(two, orig, "model.safetensors"));
  const double critic_moved =
      std::min(maxDiff(one / "critic", orig, "model.safetensors"), maxDiff(two / "critic", orig, "model.safetensors"));
  double head_abs = 0;
  for (const fs::path& run : {one, two})
    for (auto& [n, t] : llm::readTensors(run / "critic" / "value_head.safetensors"))
      head_abs = std::max(head_abs, t.to(at::kDouble).abs().max().item<double>());
  EXPECT_GT(actor_moved, 1e-4) << "PPO did not change the actor";
  EXPECT_GT(critic_moved, 1e-4) << "PPO did not change the critic";
  EXPECT_GT(head_abs, 1e-5) << "PPO did not change the value head";
  std::printf("ppo: max diff actor %.3g critic %.3g head %.3g; moved actor %.3g critic %.3g head %.3g\n", actor,
              critic, head, actor_moved, critic_moved, head_abs);
}
