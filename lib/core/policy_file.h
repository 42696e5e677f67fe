// Policy files (docs/policy.md) as plain JSON: a name or a path resolved to
// a file, and the file with its "extends" base merged in. The Clang checker
// (lib/analyze/policy.cpp) builds its rules from this; the parts of a
// policy that the run-time judges need (whether torch operations are
// allowed in a Python candidate's forward) are read here, without Clang,
// so that kbprof and kbserve on a machine with no Clang judge by the same
// file as kbcheck's static stage.
#pragma once

#include <filesystem>
#include <string>

#include "core/json.h"

namespace kb {

// "paper" is policy/default.json; another bare word NAME (no slash, no
// extension, not an existing file) is policy/NAME.json; anything else is a
// path. Empty: $KB_POLICY, else policy/default.json.
std::filesystem::path resolvePolicyFile(const std::filesystem::path& name_or_path);

// The policy file's JSON with its "extends" base (a file beside it) merged
// in: the base's fields, this file's winning; "rules" and "python_rules"
// merged key by key, and so are the keys of "extension" (its "rules" too).
// `text`, when given, gets the base's text then the file's (for a hash).
// Throws kb::UsageError when a file cannot be read or is not JSON.
Json readPolicyFile(const std::filesystem::path& path, std::string* text = nullptr);

// Whether the policy lets a Python-format candidate call torch operations
// in forward: its python_rules' py-torch-compute is not "error" (kernelbench
// turns it off; paper, the default, keeps it an error). The run-time
// provenance then counts ATen, cuBLAS and cuDNN kernels as library work,
// not foreign kernels (docs/kbprof.md).
bool policyAllowsTorchOps(const std::filesystem::path& name_or_path);

}  // namespace kb
