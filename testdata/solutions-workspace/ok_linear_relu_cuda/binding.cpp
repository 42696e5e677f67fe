// The workspace's one module: model_new.py imports it as cuda_extension.
#include <pybind11/pybind11.h>

#include "binding_registry.h"

PYBIND11_MODULE(cuda_extension, m) {
  for (auto& bind : kb_workspace::binders()) bind(m);
}
