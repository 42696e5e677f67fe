#pragma once
#include <cuda/std/climits>
namespace std { using namespace cuda::std; }
