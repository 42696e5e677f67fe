#include "core/json.h"

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
  std::ofstream out(path);
  if (!out) throw Error("cannot write " + path.string());
  out << value.dump(2) << '\n';
  if (!out) throw Error("error writing " + path.string());
}

}  // namespace kb
