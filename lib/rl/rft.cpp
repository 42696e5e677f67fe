// Rejection fine-tuning: the filters keep clean successful trajectories, then
// the actor minimises the NLL of their assistant tokens,
//   L = (1/N) sum_t -log pi(a_t | s_t)     N = action tokens of the step (all processes).
#include <cmath>

#include "core/error.h"
#include "llm/model.h"
#include "rl/gradients.h"
#include "rl/losses.h"
#include "rl/optimizer.h"
#include "rl/train_checkpoint.h"
#include "rl/train_common.h"

namespace kb::rl {

Json runRft(const RftOptions& opt) {
  const TrainOptions& o = opt.train;
  Distributed dist(distributedEnvFromEnvironment(), backendFor(o));
  const at::Device device = processDevice(o, dist);
  const Sharding shards = makeSharding(o, dist);
  const ResumePoint resume = openResume(o, "rft", dist.worldSize());
  Dataset data = loadDataset(o, &opt.filters, /*need_reward=*/false);
  progress(o, dist, "rft: kept " + std::to_string(data.filter.kept) + " of " + std::to_string(data.filter.seen) +
                        " trajectories; rejections " + data.filter.toJson()["reasons"].dump());
  llm::Model model = llm::loadModel(resume.active ? resume.dir / "model" : o.model, {device.str(), o.dtype});
  model.setRequiresGrad(true);
  const std::vector<at::Tensor> params = model.parameters();
  AdamW optim(params, adamOptions(o, o.lr));
  Gradients grads(params, gradientDtype(o.grad_dtype, model.dtype()));
  if (resume.active) loadOptimizer(optim, resume.dir / "optimizer.safetensors");
  const auto steps = makeSchedule(data.episodes.size(), o);
  checkResumeFits(resume, steps.size());
  MetricsWriter metrics(dist.rank() == 0 ? metricsPath(o) : std::filesystem::path(),
                        resume.active ? static_cast<int64_t>(resume.step) : -1);
  Json last = resume.active ? resume.state.value("last", Json()) : Json();
  auto checkpoint = [&](size_t completed) {
    writeCheckpoint(o, dist, "rft", completed, steps.size(), last, Json::object(), {}, {{"optimizer", &optim}},
                    [&](const std::filesystem::path& dir) {
                      llm::saveModel(model, dir / "model", {.dtype = "", .copy_files_from = o.model});
                    });
  };
  bool stopped = stopAgreed(o, dist, device);
  size_t completed = resume.step;
  for (size_t step = resume.step; step < steps.size() && !stopped; ++step) {
    Stopwatch clock;
    const double N = actionTokens(data, steps[step]);
    StepSums sums = zeroSums({"nll", "entropy", "tokens"}, {});
    for (const MicroBatch& mb : microBatches(data, ownedSequences(data, shards, steps[step]), o.micro_batch, device)) {
      // Forward, loss, backward; gradients accumulate over micro-batches.
      const at::Tensor logits = model.forward(mb.ids, mb.attention);
      const at::Tensor logp = targetLogprobs(logits, mb.ids);
      const at::Tensor nll = nllSum(logp, mb.mask);
      (nll / N).backward();
      grads.accumulate();
      at::NoGradGuard no_grad;
      const int64_t T = logits.size(1);
      sums.add("nll", nll.item<double>());
      sums.add("entropy", (entropyFromLogits(logits.detach().narrow(1, 0, T - 1)) * mb.mask).sum().item<double>());
      sums.add("tokens", static_cast<double>(mb.tokens));
    }
    const auto [grad_norm, lr] = applyUpdate(dist, grads, optim, o.max_grad_norm);
    sums.reduce(dist, device);
    synchronize(device);
    const double seconds = clock.seconds();
    Json r = {{"stage", "rft"}, {"step", step + 1}, {"steps", steps.size()}, {"lr", lr}};
    addRewardMetrics(r, data, steps[step]);
    r["loss"] = sums.get("nll") / N;
    r["nll"] = sums.get("nll") / N;
    r["entropy"] = sums.get("entropy") / N;
    finishStep(r, sums, N, grad_norm, seconds, metrics, o, dist);
    last = r;
    completed = step + 1;
    stopped = stopAgreed(o, dist, device);
    if (stopped || (o.checkpoint_every > 0 && completed % static_cast<size_t>(o.checkpoint_every) == 0 &&
                    completed < steps.size()))
      checkpoint(completed);
  }
  Json summary = {{"stage", "rft"}, {"data", data.toJson()}, {"options", optionsJson(o)},
                  {"world_size", dist.worldSize()}, {"steps", steps.size()}, {"last", last}};
  addCheckpointFields(summary, o, resume, stopped, completed);
  if (stopped) return summary;
  if (dist.rank() == 0) {
    llm::saveModel(model, o.out, {.dtype = "", .copy_files_from = o.model});
    writeJsonFile(o.out / "train_summary.json", summary);
  }
  removeCheckpoint(o, dist);
  dist.barrier();
  return summary;
}

}  // namespace kb::rl
