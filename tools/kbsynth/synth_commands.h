// The synthesis subcommands of kbsynth (seeds, compose, filter, stats,
// similarity): flag definitions over lib/synth, in a translation unit without
// torch headers. main.cpp adds them to its CLI11 app.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "synth/pipeline.h"

namespace kb {

struct SynthCli {
  CLI::App *seeds = nullptr, *compose = nullptr, *filter = nullptr, *stats = nullptr, *similarity = nullptr;
  std::string catalog;
  bool list_all = false;
  synth::ComposeOptions co;
  std::string mix = "paper";
  std::string out;
  std::string llm_key_env = "OPENAI_API_KEY";
  synth::FilterOptions fo;
  std::string stages;
  bool json = false;
  std::vector<std::string> programs, references;
  double max_similarity = 0.9;
};

void addSynthCommands(CLI::App& app, SynthCli& s);
// The exit status of the chosen synthesis subcommand; nullopt when another one was chosen.
std::optional<int> runSynthCommands(SynthCli& s, const std::string& python);

}  // namespace kb
