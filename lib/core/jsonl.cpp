#include "core/jsonl.h"

#include <fstream>
#include <string>

namespace kb {

std::vector<Json> readJsonLines(const std::filesystem::path& path, size_t* skipped) {
  std::vector<Json> out;
  if (skipped) *skipped = 0;
  std::ifstream in(path);
  if (!in) return out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      Json j = Json::parse(line);
      if (j.is_object()) {
        out.push_back(std::move(j));
        continue;
      }
    } catch (const Json::parse_error&) {
    }
    if (skipped) ++*skipped;
  }
  return out;
}

}  // namespace kb
