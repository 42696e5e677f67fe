// Shim: see ../README.md. Only the member ProcessGroupGloo.hpp's inline
// setTimeout() names (that function is never emitted here).
#pragma once
#include <chrono>
namespace gloo {
class Context {
 public:
  void setTimeout(std::chrono::milliseconds timeout);
};
}  // namespace gloo
