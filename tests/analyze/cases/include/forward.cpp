#include <kb/solution.h>

#include "../outside_solution.h"  // expect: [include]
#include <nlohmann/json.hpp>  // expect: [include]
#include "kernels/local.cuh"

KB_FORWARD(ctx) {}
