// Rejection fine-tuning: the filters keep clean successful trajectories, then
// the actor minimises the NLL of their assistant tokens,
//   L = (1/N) sum_t -log pi(a_t | s_t)     N = action tokens of the step (all processes).
#include <cmath>

#include "core/error.h"
#include "policy/model.h"
#include "rl/gradients.h"
#include "rl/losses.h"
#include "rl/optimizer.h"
#include "rl/train_common.h"

namespace kb::rl {

Json runRft(const RftOptions& opt) {
  const TrainOptions& o = opt.train;
  Distributed dist(distributedEnvFromEnvironment(), backendFor(o));
  const at::Device device = processDevice(o, dist);
  const Sharding shards = makeSharding(o, dist);
  Dataset data = loadDataset(o, &opt.filters, /*need_reward=*/false);
  progress(o, dist, "rft: kept " + std::to_string(data.filter.kept) + " of " + std::to_string(data.filter.seen) +
                        " trajectories; rejections " + data.filter.toJson()["reasons"].dump());
  policy::Model model = policy::loadModel(o.model, {device.str(), o.dtype});
  model.setRequiresGrad(true);
  const std::vector<at::Tensor> params = model.parameters();
  AdamW optim(params, adamOptions(o, o.lr));
  Gradients grads(params, gradientDtype(o.grad_dtype, model.dtype()));
  const auto steps = makeSchedule(data.episodes.size(), o);
  MetricsWriter metrics(dist.rank() == 0 ? metricsPath(o) : std::filesystem::path());
  Json last;
  for (size_t step = 0; step < steps.size(); ++step) {
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
  }
  Json summary = {{"stage", "rft"}, {"data", data.toJson()}, {"options", optionsJson(o)},
                  {"world_size", dist.worldSize()}, {"steps", steps.size()}, {"last", last}};
  if (dist.rank() == 0) {
    policy::saveModel(model, o.out, {.dtype = "", .copy_files_from = o.model});
    writeJsonFile(o.out / "train_summary.json", summary);
  }
  dist.barrier();
  return summary;
}

}  // namespace kb::rl
