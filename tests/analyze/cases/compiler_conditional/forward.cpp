// Code only nvcc would compile is code the checker never sees.
#include <kb/solution.h>

#include "kernels/k.cuh"

#ifdef __NVCC__  // expect: [compiler-conditional] [skipped-branch]
#include <torch/extension.h>
#endif

#if !defined(__clang__)  // expect: [compiler-conditional] [skipped-branch]
static int hidden_state = 0;
#endif

#if defined(__CUDACC_VER_MAJOR__) && __CUDACC_VER_MAJOR__ >= 12  // expect: [compiler-conditional] [skipped-branch]
#define FAST 1
#elif defined(__llvm__)  // expect: [compiler-conditional]
#define FAST 0
#endif

KB_FORWARD(ctx) {}
