#include "toy_commands.h"

#include "../cli_parse.h"
#include "core/file.h"

namespace kb::toy {

void addToyCommands(CLI::App& app, ToyCli& t) {
  t.toy = app.add_subcommand(
      "toy", "the toy task family of the learning demonstration (docs/kbtrain.md \"The toy task family\")");
  t.toy->require_subcommand(1);
  t.demos = t.toy->add_subcommand("demos", "write one demonstration trajectory per task seed");
  t.demos->add_option("--first-seed", t.first, "first task seed")->capture_default_str();
  t.demos->add_option("--last-seed", t.last, "last task seed (inclusive)")->capture_default_str();
  t.demos->add_option("-o,--out", t.out, "trajectory JSONL")->required();
  t.tasks = t.toy->add_subcommand(
      "tasks", "write the tasks first..last as KernelBench programs DIR/toy-<seed>.py; `kbsynth import DIR -o OUT` "
               "makes the bundles that --env kbcheck verifies against (OUT/<DIR's name>/toy-<seed>)");
  t.tasks->add_option("--first-seed", t.first, "first task seed")->capture_default_str();
  t.tasks->add_option("--last-seed", t.last, "last task seed (inclusive)")->capture_default_str();
  t.tasks->add_option("-o,--out", t.out, "directory for the .py files")->required();
  t.rollout = t.toy->add_subcommand(
      "rollout", "sample answers with the local policy, score them, write trajectories; prints mean reward");
  t.rollout->add_option("--model", t.rollout_options.model, "policy checkpoint")->required();
  t.rollout->add_option("-o,--out", t.rollout_options.out, "trajectory JSONL (overwritten)")->required();
  t.rollout->add_option("--first-seed", t.rollout_options.first_seed, "first task seed")->capture_default_str();
  t.rollout->add_option("--last-seed", t.rollout_options.last_seed, "last task seed (inclusive)")->capture_default_str();
  t.rollout->add_option("--samples", t.rollout_options.samples, "answers per task")->capture_default_str();
  t.rollout->add_option("--temperature", t.rollout_options.temperature, "0: greedy")->capture_default_str();
  t.rollout->add_option("--max-new-tokens", t.rollout_options.max_new_tokens, "tokens per answer at most")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  t.rollout->add_option("--device", t.rollout_options.device, "where the policy runs: cpu, cuda or cuda:N")
      ->capture_default_str()
      ->check(tools::deviceValidator());
  t.rollout->add_option("--dtype", t.rollout_options.dtype, "the policy's dtype: auto (the checkpoint's), float32, bfloat16, float16")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "float32", "bfloat16", "float16"}));
  t.rollout->add_option("--sampling-seed", t.rollout_options.sampling_seed, "seed of the sampler")->capture_default_str();
  t.rollout->add_option("--mode", t.rollout_options.mode, "recorded in each trajectory (train / eval)")->capture_default_str();
  t.rollout->add_option("--env", t.rollout_options.env,
                       "scoring: expr (the expression evaluator) or kbcheck (build + verify each answer against "
                       "its task bundle)")
      ->capture_default_str()
      ->check(CLI::IsMember({"expr", "kbcheck"}));
  t.rollout->add_option("--bundles", t.rollout_options.env_options.bundles,
                       "--env kbcheck: directory of task bundles named by task id (kbtrain toy tasks, then kbsynth import)");
  t.rollout->add_option("--env-device", t.rollout_options.env_options.device, "--env kbcheck: where answers are built for and verified: cpu, cuda[:N], or a comma list of CUDA "
                       "devices the jobs are spread over (cuda:0,cuda:1)")
      ->capture_default_str();
  t.rollout->add_option("--env-jobs", t.rollout_options.env_options.jobs, "--env kbcheck: tasks whose answers are built and verified at once")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  t.rollout->add_option("--arch", t.rollout_options.env_options.arch, "--env kbcheck: nvcc's target")->capture_default_str();
  t.rollout->add_option("--env-verdict-cache", t.rollout_options.env_options.verdict_cache,
                       "--env kbcheck: JSONL of verdicts kept across runs; a (task, answer) scored before is not "
                       "built or verified again");
  t.rollout->add_option("--env-work-dir", t.rollout_options.env_options.work_dir,
                       "--env kbcheck: keep the solution directories here (default: a temporary directory)");
}

std::optional<int> runToyCommands(ToyCli& t) {
  if (t.demos->parsed()) {
    tools::checkWritableFile(t.out.string(), "--out");
    printJsonLine(writeToyDemonstrations(t.first, t.last, t.out));
  } else if (t.tasks->parsed()) {
    tools::checkWritableDir(t.out.string(), "--out");
    printJsonLine(writeToyPrograms(t.first, t.last, t.out));
  } else if (t.rollout->parsed()) {
    tools::checkWritableFile(t.rollout_options.out.string(), "--out");
    printJsonLine(runToyRollout(t.rollout_options));
  } else {
    return std::nullopt;
  }
  return tools::kExitOk;
}

}  // namespace kb::toy
