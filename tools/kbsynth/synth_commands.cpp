#include "synth_commands.h"

#include <sstream>

#include "../cli_parse.h"
#include "core/error.h"

namespace kb {

void addSynthCommands(CLI::App& app, SynthCli& s) {
  s.seeds = app.add_subcommand("seeds",
      "Show the seed catalog (testdata/synth/seeds.json, made by scripts/fixtures/synth_seeds.py from the installed torch and "
      "transformers): how many operators were crawled, which are composable and under which shape rule, and which "
      "were excluded and why (stochastic ops). --all lists every entry as one JSON line.");
  s.seeds->add_option("--catalog", s.catalog, "Seed catalog (default $KB_SYNTH_SEEDS or testdata/synth/seeds.json)");
  s.seeds->add_flag("--all", s.list_all, "One JSON line per crawled operator");

  s.compose = app.add_subcommand("compose",
      "Compose N KernelBench programs from seed operators into OUT (programs/NNNNN.py and manifest.jsonl). "
      "Each task samples 1-5 operators (or one standalone transformers module) after --mix and stacks them with "
      "shapes that fit. The rule composer (default) needs no model and is reproducible from --seed; the LLM "
      "composer asks an OpenAI-compatible endpoint to fuse the sampled operators. Re-running the same command "
      "resumes: tasks already in the manifest are not composed again.");
  s.compose->add_option("-o,--out", s.out, "Run folder")->required();
  s.compose->add_option("-n", s.co.n, "Number of tasks")->required()->check(CLI::Range(int64_t{1}, int64_t{10000000}));
  s.compose->add_option("--seed", s.co.seed, "Seed of the run (default 0)");
  s.compose->add_option("--composer", s.co.composer, "rule (default) or llm")->check(CLI::IsMember({"rule", "llm"}));
  s.compose->add_option("--mix", s.mix,
      "Op-count mix KEY:WEIGHT,... with keys 1-5 and transformers (default \"paper\": "
      "1:3.4,2:83.8,3:7.6,4:2.8,5:1.2,transformers:1.2)");
  s.compose->add_option("--profile", s.co.profile, "Sizes: gpu (default; eager forward of about 1-100 ms on an H200) or tiny (CPU tests)")
      ->check(CLI::IsMember({"gpu", "tiny"}));
  s.compose->add_option("--catalog", s.catalog, "Seed catalog (default $KB_SYNTH_SEEDS or testdata/synth/seeds.json)");
  s.compose->add_option("--stop-after", s.co.stop_after, "Stop after composing this many new tasks (to test resuming)")
      ->check(CLI::Range(int64_t{0}, int64_t{10000000}));
  s.compose->add_option("--llm-url", s.co.llm.base_url, "LLM endpoint base URL, e.g. http://host:8000/v1 (default $OPENAI_BASE_URL)");
  s.compose->add_option("--llm-model", s.co.llm.model, "Model name (default $OPENAI_MODEL)");
  s.compose->add_option("--llm-key-env", s.llm_key_env, "Environment variable holding the API key (default OPENAI_API_KEY)");
  s.compose->add_option("--llm-temperature", s.co.llm.temperature, "Sampling temperature (default 0.7)");
  s.compose->add_option("--llm-max-tokens", s.co.llm.max_tokens, "Completion tokens per request (default 2048)");
  s.compose->add_option("--llm-attempts", s.co.llm.max_attempts, "Tries per task: first try + retries (default 4)");
  s.compose->add_option("--llm-timeout", s.co.llm.timeout_s, "Seconds per request (default 120)");
  s.compose->add_option("--llm-backoff", s.co.llm.backoff_s, "Seconds before the first retry, doubled each time (default 1)");
  s.compose->add_option("--llm-budget-tokens", s.co.llm.budget_tokens, "Cap on prompt+completion tokens over the run, resumes included (default 2000000; 0: none)");
  s.compose->add_option("--llm-budget-usd", s.co.llm.budget_usd, "Cap in dollars (needs --llm-price-in/out; default none)");
  s.compose->add_option("--llm-price-in", s.co.llm.price_in, "USD per million prompt tokens");
  s.compose->add_option("--llm-price-out", s.co.llm.price_out, "USD per million completion tokens");

  s.filter = app.add_subcommand("filter",
      "Run the filters on the composed tasks of OUT and record each task's outcome in the manifest: parse, eager "
      "(runs, predicted shape), deterministic, nondegenerate (finite, not constant, input-dependent), decontam "
      "(Python-AST similarity to --reference at most --max-similarity), timing (eager ms in [--min-ms, --max-ms], "
      "CUDA only, else skipped) and compile (torch.compile runs and matches). Parallel worker processes; resumes "
      "where it stopped. Prints the funnel.");
  s.filter->add_option("out", s.out, "Run folder")->required()->check(tools::readablePath());
  s.filter->add_option("--device", s.fo.device, "cpu (default), cuda, cuda:N, or meta (shapes only: stages parse,eager,decontam)")
      ->check(CLI::IsMember({"meta"}) | kb::tools::deviceValidator());
  s.filter->add_option("--stages", s.stages, "Comma-separated subset of the stages (default all)");
  s.filter->add_option("--reference", s.fo.references, "Reference programs for decontamination (a KernelBench checkout, folders of .py, bundles); repeatable")
      ->check(tools::readablePath());
  s.filter->add_option("--max-similarity", s.fo.max_similarity, "Largest AST similarity kept (default 0.9)")
      ->check(CLI::Range(0.0, 1.0));
  s.filter->add_option("--min-ms", s.fo.min_ms, "Shortest eager forward kept, ms (default 1)")->check(CLI::Range(0.0, 1e9));
  s.filter->add_option("--max-ms", s.fo.max_ms, "Longest eager forward kept, ms (default 100)")->check(CLI::Range(0.0, 1e9));
  s.filter->add_option("-j,--jobs", s.fo.jobs, "Worker processes of the filter pass (0, the default: cores, at most 12 on CUDA)")
      ->check(CLI::Range(0, 1024));
  s.filter->add_option("--compile-jobs", s.fo.compile_jobs, "Worker processes of the torch.compile stage (0, the default: cores, at most 16, on CUDA; else --jobs)")
      ->check(CLI::Range(0, 1024));
  s.filter->add_option("--chunk", s.fo.chunk, "Tasks per worker process before it is replaced by a fresh one (0, the default: no limit)")
      ->check(CLI::Range(0, 1000000000));
  s.filter->add_option("--task-timeout", s.fo.task_timeout, "Seconds a task may take in its worker before it is killed and recorded as timeout (default $KB_SYNTH_TASK_TIMEOUT, else 600)")
      ->check(CLI::Range(0.0, 1e9));
  s.filter->add_option("--time-limit", s.fo.time_limit, "Stop after this many seconds, tasks in flight unrecorded; exit 1; the same command resumes (default: none)")
      ->check(CLI::Range(0.0, 1e9));
  s.filter->add_flag("--bundles", s.fo.bundles, "Also capture the kept tasks as task bundles under OUT/tasks (scripts/capture.py, CPU)");
  s.filter->add_flag("--force", s.fo.force, "Filter every task again (needed when the settings change)");

  s.stats = app.add_subcommand("stats", "Print a run's op-count mix, filter funnel (drops per stage and why), "
                                        "similarity histogram and time per task.");
  s.stats->add_option("out", s.out, "Run folder")->required()->check(tools::readablePath());
  s.stats->add_flag("--json", s.json, "As one JSON object");

  s.similarity = app.add_subcommand("similarity",
      "Python-AST similarity of programs to a reference set (the decontamination measure): one JSON line per "
      "program with the similarity, the nearest reference and whether it is above --max-similarity (exit 1 if any).");
  s.similarity->add_option("programs", s.programs, "Python programs")->required()->check(tools::readablePath());
  s.similarity->add_option("--reference", s.references, "Reference folders or files (repeatable)")
      ->required()
      ->check(tools::readablePath());
  s.similarity->add_option("--max-similarity", s.max_similarity, "Threshold (default 0.9)")->check(CLI::Range(0.0, 1.0));
}

std::optional<int> runSynthCommands(SynthCli& s, const std::string& python) {
  if (*s.seeds) return synth::runSeeds(s.catalog, s.list_all);
  // compose and filter write the run folder OUT: checked first (exit 2), and
  // locked against a second kbsynth on the same folder.
  auto stop_signal = [] { return tools::StopSignals::signal(); };
  if (*s.compose) {
    s.co.out = s.out;
    s.co.mix = synth::Mix::parse(s.mix);
    s.co.catalog = s.catalog;
    if (s.co.composer == "llm") synth::llmOptionsFromEnv(s.co.llm, s.llm_key_env);
    if (s.co.llm.max_attempts < 1) throw UsageError("--llm-attempts must be at least 1");
    tools::checkWritableDir(s.out, "-o/--out");
    std::filesystem::create_directories(s.out);
    tools::OutputLock lock = tools::OutputLock::directory(s.out, "run folder " + s.out);
    tools::StopSignals stop(/*forward_to_children=*/false);
    s.co.stop_signal = stop_signal;
    return synth::runCompose(s.co);
  }
  if (*s.filter) {
    if (!std::filesystem::is_directory(s.out)) throw UsageError(s.out + ": no such run folder (kbsynth compose makes one)");
    tools::checkWritableDir(s.out, "run folder");
    tools::OutputLock lock = tools::OutputLock::directory(s.out, "run folder " + s.out);
    // The filter's workers run in their own process group: not sent SIGINT;
    // the filter stops starting tasks and kills them itself.
    tools::StopSignals stop(/*forward_to_children=*/false);
    s.fo.stop_signal = stop_signal;
    s.fo.out = s.out;
    s.fo.python = python;
    std::stringstream ss(s.stages);
    for (std::string part; std::getline(ss, part, ',');)
      if (!part.empty()) s.fo.stages.push_back(part);
    return synth::runFilter(s.fo);
  }
  if (*s.stats) return synth::runStats(s.out, s.json);
  if (*s.similarity) return synth::runSimilarity(s.programs, s.references, s.max_similarity, python);
  return std::nullopt;
}

}  // namespace kb
