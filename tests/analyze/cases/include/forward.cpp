#include <kb/solution.h>

#include "../outside_solution.h"  // expect: [include]
#include <nlohmann/json.hpp>  // expect: [include]
#include "kernels/local.cuh"
#include <c++/12/thread>  // expect: [include]
#include <x86_64-linux-gnu/sys/socket.h>  // expect: [include]

KB_FORWARD(ctx) {}
