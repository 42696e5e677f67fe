#pragma once
#include <cuda/std/cstdint>
namespace std { using namespace cuda::std; }
