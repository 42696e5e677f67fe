// Builds without libtorch_cuda: no NCCL backend.
#include <torch/csrc/distributed/c10d/Backend.hpp>

#include "core/error.h"

namespace kb::rl {

c10::intrusive_ptr<c10d::Backend> makeNcclBackend(const c10::intrusive_ptr<c10d::Store>&, int, int, int) {
  throw UsageError("this kbtrain was built without CUDA (-Dtorch_cuda=false): no NCCL backend; use --backend gloo");
}

}  // namespace kb::rl
