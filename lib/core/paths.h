// Where the toolchain finds its own files at run time (docs/install.md).
//
// Installed (`meson install`), the tools are in <prefix>/bin, the helper
// executables (kbcheck-worker, kb-agent-jail) in
// <prefix>/libexec/kernelbench-rl, and the data in
// <prefix>/share/kernelbench-rl, laid out as in the source tree:
//   scripts/*.py (the Python helpers the tools run)   policy/default.json
//   testdata/synth/seeds.json (the seed catalog)      docs/agent-guide.md
//   include/kb/solution.h, include/kb/nvrtc/ (what solutions compile against)
// The prefix is found from the running executable (/proc/self/exe), so an
// installed tree can be moved as a whole. An executable inside the build
// tree uses the source tree instead; nothing else reads it.
#pragma once

#include <filesystem>
#include <string>

namespace kb {

// The folder the data files are under: $KB_DATA_DIR when set, else the
// source tree when the running executable is inside the build tree, else
// <prefix>/share/kernelbench-rl.
std::filesystem::path dataRoot();

// dataRoot() / relative, e.g. dataPath("policy/default.json").
std::filesystem::path dataPath(const std::filesystem::path& relative);

// The toolchain's cache folder: $KB_CACHE_DIR when set, else
// $XDG_CACHE_HOME/kernelbench-rl, else ~/.cache/kernelbench-rl, else
// <temp>/kernelbench-rl.
std::filesystem::path cacheRoot();

// <prefix>/libexec/kernelbench-rl/<name> when the running executable is an
// installed one (not in the build tree), else empty: the caller then uses the
// build tree's copy.
std::filesystem::path installedHelper(const std::string& name);

}  // namespace kb
