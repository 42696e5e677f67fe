// PPO and GRPO: one update loop, two advantage estimators.
//
// Before the first step (no gradient), for every owned episode:
//   log pi_old   the policy being trained, before any update (or the
//                rollout's recorded log-probs with --old-logprobs recorded)
//   log pi_ref   the reference policy (only with --kl-coef > 0)
//   PPO:  V_old from the critic; A = GAE(gamma, lambda) over the episode's
//         action tokens with its reward on the last; R = A + V_old; A then
//         whitened over all action tokens of all processes (--no-whiten: not)
//   GRPO: A = group-normalised reward (advantages.h), the same for every
//         token of the episode; no critic
// Each step (N = action tokens of the step, all processes):
//   L_pi = (1/N) sum_t [ -min(r_t A_t, clip(r_t, 1-eps_low, 1+eps_high) A_t)
//                        + kl_coef * k3(pi, pi_ref)_t ]
//   L_V  = (1/N) sum_t 0.5 max((V_t - R_t)^2, (clip(V_t, V_old +- c) - R_t)^2)   (PPO)
// the actor and the critic each with their own AdamW and gradient clipping.
#include <cmath>
#include <limits>
#include <memory>
#include <optional>

#include "core/error.h"
#include "rl/advantages.h"
#include "rl/critic.h"
#include "rl/gradients.h"
#include "rl/losses.h"
#include "rl/optimizer.h"
#include "rl/train_checkpoint.h"
#include "rl/train_common.h"

namespace kb::rl {

Json runPolicyGradient(const PolicyGradientOptions& opt) {
  const TrainOptions& o = opt.train;
  const bool ppo = opt.estimator == "gae";
  const std::string stage = ppo ? "ppo" : "grpo";
  if (!ppo && opt.estimator != "grpo") throw UsageError("unknown advantage estimator '" + opt.estimator + "'");
  if (opt.kl_coef > 0 && opt.reference.empty()) throw UsageError("--kl-coef needs --reference DIR");
  if (opt.old_logprobs != "recompute" && opt.old_logprobs != "recorded")
    throw UsageError("--old-logprobs must be recompute or recorded");
  Distributed dist(distributedEnvFromEnvironment(), backendFor(o));
  const at::Device device = processDevice(o, dist);
  const Sharding shards = makeSharding(o, dist);
  const ResumePoint resume = openResume(o, stage, dist.worldSize());
  Dataset data = loadDataset(o, nullptr, /*need_reward=*/true);
  progress(o, dist, stage + ": " + std::to_string(data.episodes.size()) + " episodes with a reward (" +
                        std::to_string(data.dropped_no_reward) + " without one left out)");

  llm::Model actor = llm::loadModel(resume.active ? resume.dir / "model" : o.model, {device.str(), o.dtype});
  std::optional<Critic> critic;
  if (ppo) {
    if (opt.critic.empty()) throw UsageError("ppo needs --critic DIR (value-pretrain's output, or a policy checkpoint)");
    critic = loadCritic(resume.active ? resume.dir / "critic" : opt.critic, {device.str(), o.dtype});
  }
  std::vector<size_t> all(data.episodes.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;

  // --- Quantities of the rollout batch, fixed for the whole run.
  TokenTable old_logp = emptyTable(data), ref_logp = emptyTable(data), old_values = emptyTable(data),
             adv = emptyTable(data), ret = emptyTable(data);
  const NamedTables tables = {{"old_logp", &old_logp}, {"ref_logp", &ref_logp}, {"old_values", &old_values},
                              {"adv", &adv}, {"ret", &ret}};
  double adv_mean = 0, adv_std = 0, mismatch = NAN;
  if (resume.active) {
    // The tables and scalars computed before the first step, as they were.
    loadTables(resume.dir, dist.rank(), data, tables);
    const Json& sc = resume.state["scalars"];
    adv_mean = sc.value("adv_mean", 0.0);
    adv_std = sc.value("adv_std", 0.0);
    mismatch = sc.contains("logprob_mismatch") && sc["logprob_mismatch"].is_number() ? sc["logprob_mismatch"].get<double>() : NAN;
  } else {
    policyLogprobs(actor, data, shards, all, o.micro_batch, device, old_logp);
    StepSums pre = zeroSums({"mismatch_sum", "mismatch_n", "adv_n", "adv_sum", "adv_sq"}, {});
    for (size_t e = 0; e < data.episodes.size(); ++e) {
      if (!shards.owns(e)) continue;
      for (size_t s = 0; s < data.episodes[e].sequences.size(); ++s) {
        const Sequence& seq = data.episodes[e].sequences[s];
        for (size_t j = 0; j < seq.ids.size(); ++j) {
          if (!seq.mask[j]) continue;
          const float rec = seq.logprobs[j];
          if (std::isfinite(rec)) {
            pre.add("mismatch_sum", std::fabs(rec - old_logp[e][s][j]));
            pre.add("mismatch_n", 1);
            if (opt.old_logprobs == "recorded") old_logp[e][s][j] = rec;
          } else if (opt.old_logprobs == "recorded") {
            throw UsageError("--old-logprobs recorded: trajectory '" + data.episodes[e].rollout_id +
                             "' has action tokens without recorded log-probabilities");
          }
        }
      }
    }
    if (opt.kl_coef > 0) {
      const llm::Model ref = llm::loadModel(opt.reference, {device.str(), o.dtype});
      policyLogprobs(ref, data, shards, all, o.micro_batch, device, ref_logp);
    }
    if (ppo) {
      criticValues(*critic, data, shards, all, o.micro_batch, device, old_values);
      gaeTables(data, shards, old_values, opt.gamma, opt.lambda, adv, ret);
    } else {
      std::vector<double> rewards;
      std::vector<std::string> groups;
      for (const Episode& e : data.episodes) {
        rewards.push_back(*e.reward);
        groups.push_back(e.task_id);
      }
      const std::vector<double> a = groupNormalisedAdvantages(rewards, groups, opt.grpo_scale_by_std);
      for (size_t e = 0; e < data.episodes.size(); ++e)
        for (size_t s = 0; s < data.episodes[e].sequences.size(); ++s)
          adv[e][s].assign(data.episodes[e].sequences[s].ids.size(), static_cast<float>(a[e]));
    }
    for (size_t e = 0; e < data.episodes.size(); ++e) {
      if (!shards.owns(e)) continue;
      for (size_t s = 0; s < data.episodes[e].sequences.size(); ++s)
        for (size_t j = 0; j < data.episodes[e].sequences[s].ids.size(); ++j)
          if (data.episodes[e].sequences[s].mask[j]) {
            pre.add("adv_n", 1);
            pre.add("adv_sum", adv[e][s][j]);
            pre.add("adv_sq", static_cast<double>(adv[e][s][j]) * adv[e][s][j]);
          }
    }
    pre.reduce(dist, device);
    adv_mean = pre.get("adv_sum") / std::max(1.0, pre.get("adv_n"));
    adv_std = std::sqrt(std::max(0.0, pre.get("adv_sq") / std::max(1.0, pre.get("adv_n")) - adv_mean * adv_mean));
    if (ppo && opt.whiten_advantages)
      for (auto& ep : adv)
        for (auto& seq : ep)
          for (float& a : seq) a = static_cast<float>((a - adv_mean) / (adv_std + 1e-8));
    mismatch = pre.get("mismatch_n") > 0 ? pre.get("mismatch_sum") / pre.get("mismatch_n") : NAN;
  }

  // --- Updates.
  actor.setRequiresGrad(true);
  const std::vector<at::Tensor> actor_params = actor.parameters();
  AdamW actor_optim(actor_params, adamOptions(o, o.lr));
  Gradients actor_grads(actor_params, gradientDtype(o.grad_dtype, actor.dtype()));
  std::vector<at::Tensor> critic_params;
  std::unique_ptr<AdamW> critic_optim;
  std::unique_ptr<Gradients> critic_grads;
  if (ppo) {
    critic_params = critic->trainableParameters();
    for (const at::Tensor& p : critic_params) p.set_requires_grad(true);
    critic_optim = std::make_unique<AdamW>(critic_params, adamOptions(o, opt.critic_lr > 0 ? opt.critic_lr : o.lr));
    critic_grads = std::make_unique<Gradients>(critic_params, gradientDtype(o.grad_dtype, critic->backbone.dtype()));
  }
  if (resume.active) {
    loadOptimizer(actor_optim, resume.dir / "optimizer.safetensors");
    if (ppo) loadOptimizer(*critic_optim, resume.dir / "critic_optimizer.safetensors");
  }
  const auto steps = makeSchedule(data.episodes.size(), o);
  checkResumeFits(resume, steps.size());
  MetricsWriter metrics(dist.rank() == 0 ? metricsPath(o) : std::filesystem::path(),
                        resume.active ? static_cast<int64_t>(resume.step) : -1);
  Json last = resume.active ? resume.state.value("last", Json()) : Json();
  auto checkpoint = [&](size_t completed) {
    std::vector<std::pair<std::string, const AdamW*>> optimizers = {{"optimizer", &actor_optim}};
    if (ppo) optimizers.emplace_back("critic_optimizer", critic_optim.get());
    const Json scalars = {{"adv_mean", adv_mean}, {"adv_std", adv_std}, {"logprob_mismatch", finiteOrNull(mismatch)}};
    writeCheckpoint(o, dist, stage, completed, steps.size(), last, scalars, tables, optimizers,
                    [&](const std::filesystem::path& dir) {
                      llm::saveModel(actor, dir / "model", {.dtype = "", .copy_files_from = o.model});
                      if (ppo) saveCritic(*critic, dir / "critic", {.dtype = "", .copy_files_from = opt.critic});
                    });
  };
  bool stopped = stopAgreed(o, dist, device);
  size_t completed = resume.step;
  for (size_t step = resume.step; step < steps.size() && !stopped; ++step) {
    Stopwatch clock;
    const double N = actionTokens(data, steps[step]);
    StepSums sums = zeroSums({"pg_loss", "kl_ref", "entropy", "approx_kl", "clip_low", "clip_high", "ratio_sum",
                              "value_loss", "tokens", "ev_n", "ev_y", "ev_yy", "ev_r", "ev_rr"},
                             {"ratio_max"});
    for (const MicroBatch& mb : microBatches(data, ownedSequences(data, shards, steps[step]), o.micro_batch, device)) {
      const at::Tensor logits = actor.forward(mb.ids, mb.attention);
      const at::Tensor logp = targetLogprobs(logits, mb.ids);  // float32
      const at::Tensor old = gatherTable(old_logp, mb, device);
      const at::Tensor a = gatherTable(adv, mb, device);
      const ClippedSurrogate pg = clippedSurrogate(logp, old, a, mb.mask, opt.eps_low, opt.eps_high);
      at::Tensor loss = pg.loss_sum;
      at::Tensor kl_ref;
      if (opt.kl_coef > 0) {
        kl_ref = (k3Kl(logp, gatherTable(ref_logp, mb, device)) * mb.mask).sum();
        loss = loss + opt.kl_coef * kl_ref;
      }
      (loss / N).backward();
      actor_grads.accumulate();
      at::Tensor vloss, v, r;
      if (ppo) {
        v = critic->values(mb.ids, mb.attention);
        v = v.narrow(1, 0, v.size(1) - 1);
        r = gatherTable(ret, mb, device);
        vloss = valueLossSum(v, gatherTable(old_values, mb, device), r, mb.mask, opt.value_clip);
        (vloss / N).backward();
        critic_grads->accumulate();
      }
      at::NoGradGuard no_grad;
      const int64_t T = logits.size(1);
      sums.add("pg_loss", pg.loss_sum.item<double>());
      if (kl_ref.defined()) sums.add("kl_ref", kl_ref.item<double>());
      sums.add("entropy", (entropyFromLogits(logits.detach().narrow(1, 0, T - 1)) * mb.mask).sum().item<double>());
      sums.add("approx_kl", (k3Kl(logp.detach(), old) * mb.mask).sum().item<double>());
      sums.add("clip_low", pg.clipped_low.item<double>());
      sums.add("clip_high", pg.clipped_high.item<double>());
      sums.add("ratio_sum", pg.ratio_sum.item<double>());
      sums.max("ratio_max", pg.ratio_max.item<double>());
      sums.add("tokens", static_cast<double>(mb.tokens));
      if (ppo) {
        sums.add("value_loss", vloss.item<double>());
        addValueSums(sums, v, r, mb.mask);
      }
    }
    const auto [grad_norm, lr] = applyUpdate(dist, actor_grads, actor_optim, o.max_grad_norm);
    const double critic_grad_norm =
        ppo ? applyUpdate(dist, *critic_grads, *critic_optim, o.max_grad_norm).grad_norm : NAN;
    sums.reduce(dist, device);
    synchronize(device);
    const double seconds = clock.seconds();
    Json rec = {{"stage", stage}, {"step", step + 1}, {"steps", steps.size()}, {"lr", lr}};
    addRewardMetrics(rec, data, steps[step]);
    rec["loss"] = (sums.get("pg_loss") + opt.kl_coef * sums.get("kl_ref")) / N;
    rec["pg_loss"] = sums.get("pg_loss") / N;
    rec["entropy"] = sums.get("entropy") / N;
    rec["approx_kl"] = sums.get("approx_kl") / N;
    rec["kl_ref"] = opt.kl_coef > 0 ? Json(sums.get("kl_ref") / N) : Json(nullptr);
    rec["clip_frac"] = (sums.get("clip_low") + sums.get("clip_high")) / N;
    rec["clip_frac_low"] = sums.get("clip_low") / N;
    rec["clip_frac_high"] = sums.get("clip_high") / N;
    rec["ratio_mean"] = sums.get("ratio_sum") / N;
    rec["ratio_max"] = sums.get("ratio_max");
    if (ppo) {
      rec["value_loss"] = sums.get("value_loss") / N;
      rec["explained_var"] = explainedVariance(sums);
      rec["critic_grad_norm"] = critic_grad_norm;
    }
    rec["adv_mean"] = adv_mean;
    rec["adv_std"] = adv_std;
    rec["logprob_mismatch"] = finiteOrNull(mismatch);
    finishStep(rec, sums, N, grad_norm, seconds, metrics, o, dist);
    last = rec;
    completed = step + 1;
    stopped = stopAgreed(o, dist, device);
    if (stopped || (o.checkpoint_every > 0 && completed % static_cast<size_t>(o.checkpoint_every) == 0 &&
                    completed < steps.size()))
      checkpoint(completed);
  }
  Json summary = {{"stage", stage}, {"data", data.toJson()}, {"options", optionsJson(o)},
                  {"eps_low", opt.eps_low}, {"eps_high", opt.eps_high}, {"kl_coef", opt.kl_coef},
                  {"old_logprobs", opt.old_logprobs}, {"logprob_mismatch", finiteOrNull(mismatch)},
                  {"advantages_before_whitening", {{"mean", adv_mean}, {"std", adv_std}}},
                  {"world_size", dist.worldSize()}, {"steps", steps.size()}, {"last", last}};
  if (ppo) summary["gae"] = {{"gamma", opt.gamma}, {"lambda", opt.lambda}, {"value_clip", opt.value_clip}};
  addCheckpointFields(summary, o, resume, stopped, completed);
  if (stopped) return summary;
  if (dist.rank() == 0) {
    llm::saveModel(actor, o.out, {.dtype = "", .copy_files_from = o.model});
    if (ppo) {
      const std::filesystem::path cdir = opt.critic_out.empty() ? o.out / "critic" : opt.critic_out;
      saveCritic(*critic, cdir, {.dtype = "", .copy_files_from = opt.critic});
      summary["critic_out"] = cdir.string();
    }
    writeJsonFile(o.out / "train_summary.json", summary);
  }
  removeCheckpoint(o, dist);
  dist.barrier();
  return summary;
}

}  // namespace kb::rl
