// The only translation unit that includes c10d's headers (heavy).
#define USE_C10D_GLOO 1
#include "rl/distributed.h"

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <chrono>
#include <cstdlib>

#include "core/error.h"

namespace kb::rl {

// Made in distributed_nccl.cpp when NCCL is built in, else throws.
c10::intrusive_ptr<c10d::Backend> makeNcclBackend(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                  int world_size, int local_rank);

struct Distributed::Impl {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::Backend> backend;
};

namespace {

int envInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  if (*end != '\0' || x < 0) throw UsageError(std::string("environment variable ") + name + "='" + v +
                                              "' is not a non-negative integer");
  return static_cast<int>(x);
}

}  // namespace

DistributedEnv distributedEnvFromEnvironment() {
  DistributedEnv e;
  e.world_size = envInt("WORLD_SIZE", 1);
  e.rank = envInt("RANK", 0);
  e.local_rank = envInt("LOCAL_RANK", e.rank);
  if (const char* a = std::getenv("MASTER_ADDR"); a && *a) e.master_addr = a;
  e.master_port = envInt("MASTER_PORT", 29500);
  if (e.world_size < 1) throw UsageError("WORLD_SIZE must be at least 1");
  if (e.rank >= e.world_size)
    throw UsageError("RANK " + std::to_string(e.rank) + " is not below WORLD_SIZE " + std::to_string(e.world_size));
  return e;
}

Distributed::Distributed(const DistributedEnv& env, const std::string& backend) : env_(env) {
  if (!active()) return;
  impl_ = std::make_unique<Impl>();
  c10d::TCPStoreOptions so;
  so.port = static_cast<std::uint16_t>(env.master_port);
  so.isServer = env.rank == 0;
  so.numWorkers = env.world_size;
  so.waitWorkers = true;
  so.timeout = std::chrono::seconds(300);
  try {
    impl_->store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, so);
    if (backend == "gloo") {
      auto opts = c10d::ProcessGroupGloo::Options::create(std::chrono::seconds(600));
      const bool loopback = env.master_addr == "127.0.0.1" || env.master_addr == "localhost";
      if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname)
        opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
      else if (loopback)
        opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
      else
        opts->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
      impl_->backend = c10::make_intrusive<c10d::ProcessGroupGloo>(impl_->store, env.rank, env.world_size, opts);
    } else if (backend == "nccl") {
      impl_->backend = makeNcclBackend(impl_->store, env.rank, env.world_size, env.local_rank);
    } else {
      throw UsageError("unknown distributed backend '" + backend + "' (gloo or nccl)");
    }
  } catch (const c10::Error& e) {
    throw Error("distributed setup (rank " + std::to_string(env.rank) + " of " + std::to_string(env.world_size) +
                ", " + backend + ", store " + env.master_addr + ":" + std::to_string(env.master_port) +
                ") failed: " + e.what_without_backtrace());
  }
}

Distributed::~Distributed() {
  // NCCL wants an orderly shutdown (its watchdog thread otherwise complains
  // or hangs at exit); gloo's is a no-op.
  if (impl_ && impl_->backend) {
    try {
      impl_->backend->shutdown();
    } catch (const std::exception&) {
    }
  }
}

namespace {

void allReduce(c10d::Backend& backend, std::vector<at::Tensor>& tensors, c10d::ReduceOp::RedOpType op) {
  c10d::AllreduceOptions o;
  o.reduceOp = c10d::ReduceOp(op);
  for (at::Tensor& t : tensors) {
    std::vector<at::Tensor> one{t};
    backend.allreduce(one, o)->wait();
  }
}

}  // namespace

void Distributed::allReduceSum(std::vector<at::Tensor>& tensors) {
  if (active()) allReduce(*impl_->backend, tensors, c10d::ReduceOp::SUM);
}

void Distributed::allReduceMax(std::vector<at::Tensor>& tensors) {
  if (active()) allReduce(*impl_->backend, tensors, c10d::ReduceOp::MAX);
}

void Distributed::allReduceGradients(std::vector<at::Tensor>& buffers) {
  if (!active() || buffers.empty()) return;
  std::vector<at::Tensor> flat;
  for (const at::Tensor& b : buffers) flat.push_back(b.reshape({-1}));
  std::vector<at::Tensor> one{at::cat(flat)};
  allReduceSum(one);
  int64_t offset = 0;
  for (at::Tensor& b : buffers) {
    b.copy_(one[0].narrow(0, offset, b.numel()).view(b.sizes()));
    offset += b.numel();
  }
}

void Distributed::barrier() {
  if (!active()) return;
  impl_->backend->barrier()->wait();
}

}  // namespace kb::rl
