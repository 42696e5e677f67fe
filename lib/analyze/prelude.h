// The text the checker's precompiled headers are built from: the headers
// most solutions include, and the declarations Clang 19 lacks for CUDA 13
// constructs that nvcc accepts (docs/kbcheck.md, "Clang's limits").
#pragma once

namespace kb::analyze {

// For the CUDA parses (.cu, host and device side).
const char* cudaPrelude();
// For .cpp files, parsed as g++ compiles them: plain C++, no __CUDACC__.
const char* cxxPrelude();

}  // namespace kb::analyze
