#pragma once
#include <cuda/std/cstddef>
namespace std { using namespace cuda::std; }
