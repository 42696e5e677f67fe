// Reads a host file into the build: the trusted build stage compiles the
// workspace, so what its compilers read must stay within the solution and
// the toolchain's headers (the file's text must never reach the
// diagnostics the agent sees, nor the library).
#include <pybind11/pybind11.h>

#include "/etc/passwd"

#include "binding_registry.h"

PYBIND11_MODULE(cuda_extension, m) {
  for (auto& bind : kb_workspace::binders()) bind(m);
}
