// The precision class of a solution library's own kernels, from their SASS
// (`cuobjdump -sass` of the built .so): the tensor-core instructions each
// kernel contains (HMMA.1684.F32.TF32, HMMA.16816.F32.BF16, HGMMA...,
// IMMA, QGMMA, DMMA, ...). Information for the reports (profile/precision.h):
// the candidate's own kernels are judged by accuracy, never by this, since a
// 3xTF32 GEMM is TF32 tensor-core math and fp32-accurate.
//
// Classes from opcodes: HMMA/HGMMA with .TF32 -> tf32, .BF16 -> bf16,
// otherwise fp16; IMMA/IGMMA/BMMA -> int8; QMMA/QGMMA -> fp8; OMMA -> fp4;
// DMMA -> fp64; Blackwell's UTC*MMA -> by their letter (H: "tensor", Q:
// fp8, I: int8, O: fp4). A kernel without tensor-core instructions is
// "fp32" when it has FFMA/FMUL/FADD, "fp64" when only DFMA/DMUL/DADD, else
// "unknown" (packed half SIMT math, HFMA2, is not classified: compilers use
// HFMA2.MMA to move constants).
#pragma once

#include <filesystem>
#include <istream>
#include <map>
#include <string>

#include "profile/precision.h"

namespace kb::profile {

// Parses cuobjdump -sass output: "Function : <mangled name>" headers, then
// instructions. Keyed by normalizedKernelName(); several architectures'
// code of one kernel merge into the narrowest class.
std::map<std::string, SassKernel> parseSass(std::istream& in);

struct SassScan {
  std::map<std::string, SassKernel> kernels;
  std::string status;  // "read", or why it was not: "cuobjdump not found", "cuobjdump failed (exit 1)", ...
};

// Runs cuobjdump -sass on `library` (the first of $KB_CUOBJDUMP,
// <CUDA toolkit>/bin/cuobjdump, cuobjdump on $PATH) with a wall-clock
// limit, and parses what it prints. Never throws.
SassScan readLibrarySass(const std::filesystem::path& library, int timeout_seconds = 60);

}  // namespace kb::profile
