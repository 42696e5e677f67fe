// skipped-branch: every branch a parse skipped under a condition that g++ or
// nvcc may answer differently from Clang. forward.cpp is parsed as g++
// compiles it (plain C++, -O2: __OPTIMIZE__ defined, __CUDACC__ not).
#include <kb/solution.h>

#include "kernels/cfg.h"
#include "kernels/k.cuh"

#if __GNUC__ >= 5  // expect: [skipped-branch]
static const int kHidden = 1;
#endif

#ifndef __OPTIMIZE__  // expect: [skipped-branch]
static const int kDebugOnly = 1;
#endif

// g++ never defines __CUDACC__: taken here, so the body is checked (and
// its getenv is found).
#ifndef __CUDACC__
#include <cstdlib>
static const char* probe() { return std::getenv("HOME"); }  // expect: [environment]
#endif

// Trusted: __CUDACC__ has the same value for g++ and for this parse.
#ifdef __CUDACC__
static const int kDeviceOnly = 1;
#endif

// Nesting and #elif: the chain's earlier conditions count.
#if TILE > 32
#if __has_builtin(__builtin_expect)
static const int kA = 1;
#elif __GNUC__ > 100  // expect: [skipped-branch]
static const int kB = 1;
#else  // (inside the #elif's skipped range: reported there)
static const int kC = 1;
#endif
#endif

// Macro indirection, defined() inside a macro, token pasting.
#define COMPILER_MAJOR __GNUC__
#if COMPILER_MAJOR > 4  // expect: [skipped-branch]
static const int kD = 1;
#endif
#define IS_FAST defined(__FAST_MATH__)
#if IS_FAST  // expect: [skipped-branch]
static const int kE = 1;
#endif
#define GLUE(a, b) a##b
#define PART_A 1
#define PART_B 2
#if GLUE(PART_, A) == 7  // expect: [skipped-branch]
static const int kF = 1;
#endif

// __has_include answers differently with nvcc's include path.
#if 0
#elif __has_include(<nonexistent_header.h>)  // expect: [skipped-branch]
static const int kG = 1;
#endif

// A macro defined under an untrusted condition is itself untrusted, and so
// is one a #pragma pop_macro brings back.
#if __GNUC__ < 5
#define SAFE_BUILD 1
#endif
#ifndef SAFE_BUILD  // expect: [skipped-branch]
static const int kH = 1;
#endif
#define MODE 0
#pragma push_macro("MODE")
#undef MODE
#define MODE 1
#pragma pop_macro("MODE")
#if MODE == 1  // expect: [skipped-branch]
static const int kI = 1;
#endif

// An undefined name is untrusted: a compiler may predefine it.
#ifdef SOME_FLAG  // expect: [skipped-branch]
static const int kJ = 1;
#endif

// Trusted: the solution's own fixed macros, #undef, and #if 0.
#define USE_VEC 1
#if USE_VEC
static const int kK = 1;
#else
static const int kL = 1;
#endif
#undef USE_VEC
#ifdef USE_VEC
static const int kM = 1;
#endif
#if 0
static const int kN = 1;
#endif

KB_FORWARD(ctx) { (void)probe; }
