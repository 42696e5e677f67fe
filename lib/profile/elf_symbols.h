// The functions a shared object defines, read from its ELF symbol tables
// (.symtab, else .dynsym). nvcc gives every __global__ function a host stub
// under the kernel's own (mangled) name, so this is the list of kernels a
// built solution can launch as its own: what CUPTI reports as a kernel's
// name is compared against it (profile/provenance.h).
#pragma once

#include <filesystem>
#include <set>
#include <string>
#include <vector>

namespace kb::profile {

struct ElfSymbols {
  std::set<std::string> defined_functions;  // STT_FUNC, defined here
  std::set<std::string> undefined;          // imported (weak ones included)
};

// The symbols of an ELF64 little-endian file. Throws kb::Error naming the
// file when it is not one or is truncated.
ElfSymbols readElfSymbols(const std::filesystem::path& elf_file);

// What a solution library imports that it must not: torch/ATen/c10 symbols
// (work hidden behind a declaration of a mangled name, left undefined as a
// weak symbol so that `-z defs` lets it link) and the dynamic loader's
// look-up functions (dlopen, dlsym, dlvsym: calling into whatever is loaded).
// One line per symbol; empty when clean.
std::vector<std::string> forbiddenImports(const ElfSymbols& symbols);

}  // namespace kb::profile
