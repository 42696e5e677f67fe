#include "rl/random_model.h"

#include "core/json.h"
#include "llm/model.h"

namespace fs = std::filesystem;

namespace kb::rl {

void writeRandomModel(const fs::path& config_path, const fs::path& tokenizer_dir, const fs::path& out,
                      const std::string& dtype, uint64_t seed) {
  const llm::ModelConfig config = llm::parseModelConfig(readJsonFile(config_path), config_path.string());
  llm::Model m = llm::randomModel(config, {.device = "cpu", .dtype = dtype}, seed);
  llm::saveModel(m, out, {.dtype = "", .copy_files_from = tokenizer_dir});
}

}  // namespace kb::rl
