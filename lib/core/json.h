// JSON for every report and config: nlohmann::json, insertion-ordered so that
// reports keep the field order the docs describe.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace kb {

using Json = nlohmann::ordered_json;

// Reads and parses a JSON file; throws kb::Error naming the file on failure.
Json readJsonFile(const std::filesystem::path& path);

// Writes `value` (indented) followed by a newline; throws kb::Error on failure.
void writeJsonFile(const std::filesystem::path& path, const Json& value);

// Parses text from outside (an HTTP body, a WebSocket message): a discarded
// value when it is not JSON or nests arrays and objects deeper than
// `max_depth`. nlohmann's dump() and destructor recurse once per level, so a
// 200 KB `[[[[...` echoed in an error message overflowed a server thread's
// stack (a review by attack, 2026-12-07); nothing we accept nests deeply.
Json parseUntrustedJson(std::string_view text, int max_depth = 64);

// The deepest nesting of arrays and objects in `text` (strings skipped),
// read without parsing.
int jsonNestingDepth(std::string_view text);

}  // namespace kb
