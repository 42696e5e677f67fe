// Data parallelism over LibTorch's c10d, started torchrun-style: every
// process reads RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT; rank
// 0 hosts the TCPStore rendezvous. Gloo on CPU, NCCL on CUDA (the NCCL
// backend exists only in builds with -Dtorch_cuda=true). Without WORLD_SIZE
// (or with WORLD_SIZE=1) it is a single process and every collective is a
// no-op. docs/kbtrain.md "Data parallel" explains why the result equals one
// process on the whole batch.
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <string>
#include <vector>

namespace kb::rl {

struct DistributedEnv {
  int rank = 0, world_size = 1, local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
};

// Reads the torchrun variables; throws kb::UsageError on malformed values.
DistributedEnv distributedEnvFromEnvironment();

class Distributed {
 public:
  // backend: "gloo" or "nccl"; ignored for a single process.
  Distributed(const DistributedEnv& env, const std::string& backend);
  ~Distributed();

  int rank() const { return env_.rank; }
  int worldSize() const { return env_.world_size; }
  int localRank() const { return env_.local_rank; }
  bool active() const { return env_.world_size > 1; }

  // In-place sum over processes. The tensors must live where the backend
  // works (CPU for gloo, CUDA for nccl).
  void allReduceSum(std::vector<at::Tensor>& tensors);
  void allReduceMax(std::vector<at::Tensor>& tensors);
  // Sums gradient buffers (all of one dtype) over processes: one flat
  // buffer, one collective.
  void allReduceGradients(std::vector<at::Tensor>& buffers);
  void barrier();

  struct Impl;

 private:
  DistributedEnv env_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kb::rl
