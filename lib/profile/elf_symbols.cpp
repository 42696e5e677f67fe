#include "profile/elf_symbols.h"

#include <elf.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

#include "core/error.h"

namespace kb::profile {
namespace {

template <typename T>
T readAt(const std::string& data, uint64_t offset, const std::filesystem::path& file) {
  if (offset > data.size() || data.size() - offset < sizeof(T))
    throw Error(file.string() + ": truncated ELF file (offset " + std::to_string(offset) + ")");
  T value;
  std::memcpy(&value, data.data() + offset, sizeof(T));
  return value;
}

}  // namespace

ElfSymbols readElfSymbols(const std::filesystem::path& elf_file) {
  std::ifstream in(elf_file, std::ios::binary);
  if (!in) throw Error("cannot read " + elf_file.string());
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto eh = readAt<Elf64_Ehdr>(data, 0, elf_file);
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_ident[EI_DATA] != ELFDATA2LSB)
    throw Error(elf_file.string() + ": not a 64-bit little-endian ELF file");
  if (eh.e_shentsize != sizeof(Elf64_Shdr)) throw Error(elf_file.string() + ": unexpected section header size");
  std::vector<Elf64_Shdr> sections;
  for (uint16_t i = 0; i < eh.e_shnum; ++i)
    sections.push_back(readAt<Elf64_Shdr>(data, eh.e_shoff + uint64_t{i} * sizeof(Elf64_Shdr), elf_file));

  ElfSymbols out;
  for (uint32_t want : {uint32_t{SHT_SYMTAB}, uint32_t{SHT_DYNSYM}}) {
    for (const auto& sh : sections) {
      if (sh.sh_type != want || sh.sh_entsize != sizeof(Elf64_Sym) || sh.sh_link >= sections.size()) continue;
      const Elf64_Shdr& strtab = sections[sh.sh_link];
      for (uint64_t off = 0; off + sizeof(Elf64_Sym) <= sh.sh_size; off += sizeof(Elf64_Sym)) {
        auto sym = readAt<Elf64_Sym>(data, sh.sh_offset + off, elf_file);
        if (sym.st_name == 0) continue;
        uint64_t at = strtab.sh_offset + sym.st_name;
        if (at >= data.size()) continue;
        const char* s = data.data() + at;
        std::string name(s, strnlen(s, data.size() - at));
        if (sym.st_shndx == SHN_UNDEF)
          out.undefined.insert(name);
        else if (ELF64_ST_TYPE(sym.st_info) == STT_FUNC)
          out.defined_functions.insert(name);
      }
    }
  }
  return out;
}

}  // namespace kb::profile

namespace kb::profile {

std::vector<std::string> forbiddenImports(const ElfSymbols& symbols) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& s : symbols.undefined) {
    std::string base = s.substr(0, s.find('@'));  // "dlsym@GLIBC_2.2.5"
    if (!seen.insert(base).second) continue;
    if (base == "dlopen" || base == "dlsym" || base == "dlvsym" || base == "dlmopen")
      out.push_back(base + ": looks up code at run time (whatever the process has loaded, torch included)");
    else
      for (const char* p : {"_ZN2at", "_ZN3c10", "_ZN5torch", "_ZN6caffe2", "_ZNK2at", "_ZNK3c10", "THP"})
        if (base.rfind(p, 0) == 0) {
          out.push_back(base + ": a PyTorch symbol (the solution must not call into torch)");
          break;
        }
  }
  return out;
}

}  // namespace kb::profile
