// JSON for every report and config: nlohmann::json, insertion-ordered so that
// reports keep the field order the docs describe.
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace kb {

using Json = nlohmann::ordered_json;

// Reads and parses a JSON file; throws kb::Error naming the file on failure.
Json readJsonFile(const std::filesystem::path& path);

// Writes `value` (indented) followed by a newline; throws kb::Error on failure.
void writeJsonFile(const std::filesystem::path& path, const Json& value);

}  // namespace kb
