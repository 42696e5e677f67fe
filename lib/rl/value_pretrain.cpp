// Value pretraining of the critic (DESIGN.md §1): at the start of each epoch
// the critic's own values give GAE advantages over each episode's action
// tokens (terminal reward), and the targets V_targ = V(s_t) + A_t; then
//   L = (1/N) sum_t 0.5 (V(s_t) - V_targ,t)^2        (clipped around V(s_t) with --value-clip).
#include <cmath>

#include "core/error.h"
#include "rl/advantages.h"
#include "rl/critic.h"
#include "rl/gradients.h"
#include "rl/losses.h"
#include "rl/optimizer.h"
#include "rl/train_checkpoint.h"
#include "rl/train_common.h"

namespace kb::rl {

Json runValuePretrain(const ValuePretrainOptions& opt) {
  const TrainOptions& o = opt.train;
  Distributed dist(distributedEnvFromEnvironment(), backendFor(o));
  const at::Device device = processDevice(o, dist);
  const Sharding shards = makeSharding(o, dist);
  const ResumePoint resume = openResume(o, "value-pretrain", dist.worldSize());
  Dataset data = loadDataset(o, nullptr, /*need_reward=*/true);
  progress(o, dist, "value-pretrain: " + std::to_string(data.episodes.size()) + " episodes with a reward (" +
                        std::to_string(data.dropped_no_reward) + " without one left out)");
  Critic critic = loadCritic(resume.active ? resume.dir / "model" : o.model, {device.str(), o.dtype});
  const bool head_loaded =
      resume.active ? resume.state["scalars"].value("head_loaded", critic.head_loaded) : critic.head_loaded;
  const std::vector<at::Tensor> params = critic.trainableParameters();
  for (const at::Tensor& p : params) p.set_requires_grad(true);
  AdamW optim(params, adamOptions(o, o.lr));
  Gradients grads(params, gradientDtype(o.grad_dtype, critic.backbone.dtype()));
  if (resume.active) loadOptimizer(optim, resume.dir / "optimizer.safetensors");
  const auto steps = makeSchedule(data.episodes.size(), o);
  checkResumeFits(resume, steps.size());
  const size_t per_epoch = (data.episodes.size() + static_cast<size_t>(o.batch_size) - 1) / static_cast<size_t>(o.batch_size);
  std::vector<size_t> all(data.episodes.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  TokenTable old_values = emptyTable(data), adv = emptyTable(data), ret = emptyTable(data);
  const NamedTables tables = {{"old_values", &old_values}, {"adv", &adv}, {"ret", &ret}};
  // The targets of the epoch the checkpoint was taken in (a new epoch computes fresh ones).
  if (resume.active) loadTables(resume.dir, dist.rank(), data, tables);
  MetricsWriter metrics(dist.rank() == 0 ? metricsPath(o) : std::filesystem::path(),
                        resume.active ? static_cast<int64_t>(resume.step) : -1);
  Json last = resume.active ? resume.state.value("last", Json()) : Json();
  auto checkpoint = [&](size_t completed) {
    writeCheckpoint(o, dist, "value-pretrain", completed, steps.size(), last, {{"head_loaded", head_loaded}}, tables,
                    {{"optimizer", &optim}}, [&](const std::filesystem::path& dir) {
                      saveCritic(critic, dir / "model", {.dtype = "", .copy_files_from = o.model});
                    });
  };
  bool stopped = stopAgreed(o, dist, device);
  size_t completed = resume.step;
  for (size_t step = resume.step; step < steps.size() && !stopped; ++step) {
    if (step % per_epoch == 0) {  // fresh targets from the current critic
      criticValues(critic, data, shards, all, o.micro_batch, device, old_values);
      gaeTables(data, shards, old_values, opt.gamma, opt.lambda, adv, ret);
    }
    Stopwatch clock;
    const double N = actionTokens(data, steps[step]);
    StepSums sums = zeroSums({"value_loss", "tokens", "ev_n", "ev_y", "ev_yy", "ev_r", "ev_rr"}, {});
    for (const MicroBatch& mb : microBatches(data, ownedSequences(data, shards, steps[step]), o.micro_batch, device)) {
      at::Tensor v = critic.values(mb.ids, mb.attention);
      v = v.narrow(1, 0, v.size(1) - 1);
      const at::Tensor target = gatherTable(ret, mb, device);
      const at::Tensor loss = valueLossSum(v, gatherTable(old_values, mb, device), target, mb.mask, opt.value_clip);
      (loss / N).backward();
      grads.accumulate();
      at::NoGradGuard no_grad;
      sums.add("value_loss", loss.item<double>());
      sums.add("tokens", static_cast<double>(mb.tokens));
      addValueSums(sums, v, target, mb.mask);
    }
    const auto [grad_norm, lr] = applyUpdate(dist, grads, optim, o.max_grad_norm);
    sums.reduce(dist, device);
    synchronize(device);
    const double seconds = clock.seconds();
    Json r = {{"stage", "value-pretrain"}, {"step", step + 1}, {"steps", steps.size()}, {"lr", lr}};
    addRewardMetrics(r, data, steps[step]);
    r["loss"] = sums.get("value_loss") / N;
    r["value_loss"] = sums.get("value_loss") / N;
    r["explained_var"] = explainedVariance(sums);
    finishStep(r, sums, N, grad_norm, seconds, metrics, o, dist);
    last = r;
    completed = step + 1;
    stopped = stopAgreed(o, dist, device);
    if (stopped || (o.checkpoint_every > 0 && completed % static_cast<size_t>(o.checkpoint_every) == 0 &&
                    completed < steps.size()))
      checkpoint(completed);
  }
  Json summary = {{"stage", "value-pretrain"}, {"data", data.toJson()}, {"options", optionsJson(o)},
                  {"gamma", opt.gamma}, {"lambda", opt.lambda}, {"value_clip", opt.value_clip},
                  {"head_loaded", head_loaded}, {"world_size", dist.worldSize()},
                  {"steps", steps.size()}, {"last", last}};
  addCheckpointFields(summary, o, resume, stopped, completed);
  if (stopped) return summary;
  if (dist.rank() == 0) {
    saveCritic(critic, o.out, {.dtype = "", .copy_files_from = o.model});
    writeJsonFile(o.out / "train_summary.json", summary);
  }
  removeCheckpoint(o, dist);
  dist.barrier();
  return summary;
}

}  // namespace kb::rl
