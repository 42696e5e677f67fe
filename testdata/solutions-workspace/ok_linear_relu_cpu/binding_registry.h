// The binding registry of the CUDA Agent paper's workspace layout (its
// agent_workdir keeps one beside binding.cpp): each kernels/*_binding.cpp
// registers a function that adds its ops to the module, with
// REGISTER_BINDING(name, fn); binding.cpp's module applies them all.
// Written for this test from the layout's conventions.
#pragma once

#include <pybind11/pybind11.h>

#include <functional>
#include <vector>

namespace kb_workspace {

using Binder = std::function<void(pybind11::module&)>;

inline std::vector<Binder>& binders() {
  static std::vector<Binder> all;
  return all;
}

struct Registration {
  explicit Registration(Binder b) { binders().push_back(std::move(b)); }
};

}  // namespace kb_workspace

#define REGISTER_BINDING(name, fn) static ::kb_workspace::Registration kb_binding_##name([](pybind11::module& m) { fn(m); })
