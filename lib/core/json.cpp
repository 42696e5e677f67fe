#include "core/json.h"

#include "core/file.h"

#include <algorithm>
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

int jsonNestingDepth(std::string_view text) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '[' || c == '{') deepest = std::max(deepest, ++depth);
    else if ((c == ']' || c == '}') && depth > 0) --depth;
  }
  return deepest;
}

Json parseUntrustedJson(std::string_view text, int max_depth) {
  if (jsonNestingDepth(text) > max_depth) return Json(Json::value_t::discarded);
  return Json::parse(text, nullptr, false);
}

}  // namespace kb
