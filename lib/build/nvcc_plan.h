// nvcc's plan for one `nvcc -c x.cu`, read from its `-dryrun` output and
// split into the two halves that do not depend on each other:
//
//   host:   preprocess (host) -> cudafe++          (the host front end)
//   device: preprocess (device) -> cicc -> ptxas -> fatbinary
//   after:  the host compiler on cudafe++'s output, which includes the
//           fatbinary and cicc's launch stubs
//
// nvcc runs these one after another; side by side a cold build of a small
// .cu takes about a third less (on the H200 machine, 1.29 s -> ~0.86 s,
// measured with `nvcc --time`). The one link between the halves is the
// module id that names the file's anonymous namespace in both: cudafe++
// writes it and cicc reads it. cicc can write it too, from the same source
// and options, so each half writes its own copy and the caller compares the
// two before the host compile (any difference: run nvcc itself).
//
// The commands are nvcc's own, unchanged but for that one flag of cicc's.
// A plan of any other shape (several architectures, -rdc, a toolkit that
// plans differently) is refused, and the caller runs nvcc as before.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace kb::build {

struct NvccPlan {
  std::vector<std::string> env;  // nvcc's variables ("NAME=value"), for every command
  std::vector<std::vector<std::string>> host, device, after;
  std::string host_module_id, device_module_id;  // the files each half writes
};

// Parses `nvcc ... -c SRC -o OBJ -dryrun` output (lines "#$ ..."). nullopt
// with `why` set when the plan is not the shape above.
std::optional<NvccPlan> parseNvccDryRun(const std::string& text, std::string* why);

// Splits one shell command line of a dry run into words: double and single
// quotes group, $NAME and ${NAME} expand from `vars` ("NAME=value")
// outside single quotes. Throws kb::Error on an unclosed quote.
std::vector<std::string> splitShellWords(const std::string& line, const std::vector<std::string>& vars);

}  // namespace kb::build
