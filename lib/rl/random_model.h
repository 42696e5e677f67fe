// `kbtrain init-model`: a randomly initialised checkpoint (benchmarks, the
// toy family's learning run).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace kb::rl {

// A random model of `config_path`'s shape with the tokenizer files of
// `tokenizer_dir`, written to `out`.
void writeRandomModel(const std::filesystem::path& config_path, const std::filesystem::path& tokenizer_dir,
                      const std::filesystem::path& out, const std::string& dtype, uint64_t seed);

}  // namespace kb::rl
