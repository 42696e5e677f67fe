// NCCL backend (built only with -Dtorch_cuda=true: needs CUDA and NCCL headers).
#define USE_C10D_NCCL 1
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

namespace kb::rl {

c10::intrusive_ptr<c10d::Backend> makeNcclBackend(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                  int world_size, int local_rank) {
  // This process's GPU is the current device, so that NCCL's barrier and
  // communicator setup use it (not cuda:0 in every process).
  c10::cuda::set_device(static_cast<c10::DeviceIndex>(local_rank));
  return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, world_size);
}

}  // namespace kb::rl
