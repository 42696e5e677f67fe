// NCCL backend (built only with -Dtorch_cuda=true: needs CUDA and NCCL headers).
#define USE_C10D_NCCL 1
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

namespace kb::rl {

c10::intrusive_ptr<c10d::Backend> makeNcclBackend(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                  int world_size) {
  return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, world_size);
}

}  // namespace kb::rl
