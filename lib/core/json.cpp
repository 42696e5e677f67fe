#include "core/json.h"

#include "core/file.h"

#include <fstream>
#include <sstream>

#include "core/error.h"

namespace kb {

Json readJsonFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw Error("cannot open " + path.string());
  try {
    return Json::parse(in);
  } catch (const Json::parse_error& e) {
    throw Error(path.string() + ": invalid JSON: " + e.what());
  }
}

void writeJsonFile(const std::filesystem::path& path, const Json& value) {
  // Whole or not at all, the errno named (a full disk left 0-byte JSON).
  writeFileAtomic(path, value.dump(2) + "\n");
}

}  // namespace kb
