#pragma once
#include <cuda/std/cfloat>
namespace std { using namespace cuda::std; }
