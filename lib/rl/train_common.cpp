#include "rl/train_common.h"

#include <ATen/detail/CUDAHooksInterface.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>

#include "core/error.h"
#include "rl/advantages.h"
#include "rl/critic.h"
#include "llm/chat_template.h"
#include "llm/model.h"
#include "llm/tokenizer.h"

namespace fs = std::filesystem;

namespace kb::rl {

Json Dataset::toJson() const {
  size_t seqs = 0, tokens = 0, actions = 0;
  for (const Episode& e : episodes) {
    seqs += e.sequences.size();
    tokens += e.tokens();
    actions += e.actionTokens();
  }
  Json j = {{"records", records},
            {"unreadable_lines", unreadable_lines},
            {"dropped_no_reward", dropped_no_reward},
            {"episodes", episodes.size()},
            {"sequences", seqs},
            {"tokens", tokens},
            {"action_tokens", actions},
            {"tokens_from_recorded", from_recorded},
            {"tokens_from_template", from_template},
            {"truncated_episodes", truncated},
            {"substituted_rewards", substituted_rewards}};
  if (filtered) j["filters"] = filter.toJson();
  return j;
}

Dataset loadDataset(const TrainOptions& o, const FilterOptions* filters, bool need_reward) {
  if (o.trajectories.empty()) throw UsageError("no trajectory files given");
  const fs::path tok_path = o.tokenizer.empty() ? o.model / "tokenizer.json" : o.tokenizer;
  if (!fs::exists(tok_path)) throw UsageError("tokenizer not found: " + tok_path.string() + " (use --tokenizer)");
  const llm::Tokenizer tok = llm::Tokenizer::fromFile(tok_path);
  // The checkpoint's own chat template (episodes without recorded token ids
  // are rendered with it); the tokenizer's directory when the model has none.
  llm::ChatTemplate chat = llm::ChatTemplate::fromCheckpoint(o.model);
  if (chat.unavailable && !o.tokenizer.empty()) {
    llm::ChatTemplate other = llm::ChatTemplate::fromCheckpoint(o.tokenizer);
    if (!other.unavailable) chat = other;
  }
  Dataset d;
  std::vector<Json> all;
  for (const fs::path& f : o.trajectories) {
    size_t skipped = 0;
    for (Json& j : readJsonl(f, &skipped)) all.push_back(std::move(j));
    d.unreadable_lines += skipped;
  }
  d.records = all.size();
  if (o.unprofiled_correct_reward)
    for (Json& t : all)
      if (t.contains("reward") && t["reward"].is_object() && t["reward"].value("value", Json()).is_null() &&
          t["reward"].value("excluded", Json()) == "profile_not_available" && t["reward"].value("correct", false)) {
        t["reward"]["value"] = *o.unprofiled_correct_reward;
        t["reward"]["substituted"] = true;
        ++d.substituted_rewards;
      }
  if (filters) {
    all = filterTrajectories(all, *filters, &d.filter);
    d.filtered = true;
  }
  EpisodeOptions eo;
  eo.use_recorded_tokens = o.use_recorded_tokens;
  eo.max_length = o.max_length;
  for (const Json& t : all) {
    Episode e = episodeFromTrajectory(t, tok, chat, eo);
    if (need_reward && !e.reward) {
      ++d.dropped_no_reward;
      continue;
    }
    if (e.actionTokens() == 0) continue;
    (e.tokens_from == "recorded" ? d.from_recorded : d.from_template)++;
    d.truncated += e.truncated;
    d.episodes.push_back(std::move(e));
  }
  if (d.episodes.empty())
    throw UsageError("no trajectories left to train on (" + std::to_string(d.records) + " read" +
                     (filters ? ", " + std::to_string(d.filter.rejected) + " rejected by the filters" : "") +
                     (need_reward ? ", " + std::to_string(d.dropped_no_reward) + " without a reward" : "") + ")");
  return d;
}

std::vector<std::vector<size_t>> makeSchedule(size_t n, const TrainOptions& o) {
  if (o.batch_size < 1) throw UsageError("--batch-size must be at least 1");
  std::vector<std::vector<size_t>> steps;
  std::mt19937_64 rng(o.seed);
  for (int64_t epoch = 0; epoch < std::max<int64_t>(1, o.epochs); ++epoch) {
    std::vector<size_t> order(n);
    for (size_t i = 0; i < n; ++i) order[i] = i;
    if (o.shuffle)
      for (size_t i = n; i > 1; --i) std::swap(order[i - 1], order[rng() % i]);
    for (size_t b = 0; b < n; b += static_cast<size_t>(o.batch_size))
      steps.emplace_back(order.begin() + static_cast<long>(b),
                         order.begin() + static_cast<long>(std::min(n, b + static_cast<size_t>(o.batch_size))));
  }
  if (o.max_steps > 0 && steps.size() > static_cast<size_t>(o.max_steps)) steps.resize(static_cast<size_t>(o.max_steps));
  return steps;
}

Sharding makeSharding(const TrainOptions& o, const Distributed& d) {
  Sharding sh;
  sh.rank = d.rank();
  sh.world_size = d.worldSize();
  sh.shards = static_cast<size_t>(o.shards > 0 ? o.shards : d.worldSize());
  if (sh.shards % static_cast<size_t>(sh.world_size) != 0)
    throw UsageError("--shards " + std::to_string(sh.shards) + " is not a multiple of WORLD_SIZE " +
                     std::to_string(sh.world_size));
  return sh;
}

std::vector<std::vector<SeqRef>> ownedSequences(const Dataset& d, const Sharding& sh,
                                                const std::vector<size_t>& episodes) {
  std::vector<std::vector<SeqRef>> groups;
  for (size_t shard = 0; shard < sh.shards; ++shard) {
    if (static_cast<int>(shard % static_cast<size_t>(sh.world_size)) != sh.rank) continue;
    std::vector<SeqRef> g;
    for (size_t e : episodes)
      if (sh.shardOf(e) == shard)
        for (size_t s = 0; s < d.episodes[e].sequences.size(); ++s) g.push_back({e, s});
    if (!g.empty()) groups.push_back(std::move(g));
  }
  return groups;
}

std::vector<MicroBatch> microBatches(const Dataset& d, const std::vector<std::vector<SeqRef>>& groups, int64_t size,
                                     const at::Device& device) {
  std::vector<MicroBatch> out;
  const size_t chunk = static_cast<size_t>(std::max<int64_t>(1, size));
  for (const std::vector<SeqRef>& items : groups)
  for (size_t b = 0; b < items.size(); b += chunk) {
    MicroBatch mb;
    mb.items.assign(items.begin() + static_cast<long>(b), items.begin() + static_cast<long>(std::min(items.size(), b + chunk)));
    int64_t T = 2;
    for (const SeqRef& r : mb.items)
      T = std::max<int64_t>(T, static_cast<int64_t>(d.episodes[r.episode].sequences[r.sequence].ids.size()));
    const int64_t B = static_cast<int64_t>(mb.items.size());
    at::Tensor ids = at::zeros({B, T}, at::kLong), att = at::zeros({B, T}, at::kBool), mask = at::zeros({B, T - 1}, at::kFloat);
    auto pi = ids.accessor<int64_t, 2>();
    auto pa = att.accessor<bool, 2>();
    auto pm = mask.accessor<float, 2>();
    for (int64_t i = 0; i < B; ++i) {
      const Sequence& s = d.episodes[mb.items[i].episode].sequences[mb.items[i].sequence];
      for (size_t j = 0; j < s.ids.size(); ++j) {
        pi[i][j] = s.ids[j];
        pa[i][j] = true;
        if (j > 0) pm[i][j - 1] = s.mask[j] ? 1.f : 0.f;
      }
      mb.tokens += static_cast<int64_t>(s.ids.size());
    }
    mb.ids = ids.to(device);
    mb.attention = att.to(device);
    mb.mask = mask.to(device);
    out.push_back(std::move(mb));
  }
  return out;
}

TokenTable emptyTable(const Dataset& d) {
  TokenTable t(d.episodes.size());
  for (size_t e = 0; e < d.episodes.size(); ++e) t[e].resize(d.episodes[e].sequences.size());
  return t;
}

at::Tensor gatherTable(const TokenTable& t, const MicroBatch& mb, const at::Device& device) {
  const int64_t B = mb.ids.size(0), T = mb.ids.size(1);
  at::Tensor out = at::zeros({B, T - 1}, at::kFloat);
  auto po = out.accessor<float, 2>();
  for (int64_t i = 0; i < B; ++i) {
    const std::vector<float>& v = t[mb.items[i].episode][mb.items[i].sequence];
    for (size_t j = 1; j < v.size(); ++j) po[i][j - 1] = std::isfinite(v[j]) ? v[j] : 0.f;
  }
  return out.to(device);
}

void scatterTable(TokenTable& t, const MicroBatch& mb, const at::Tensor& values) {
  at::Tensor cpu = values.detach().to(at::kCPU, at::kFloat).contiguous();
  auto pv = cpu.accessor<float, 2>();
  for (size_t i = 0; i < mb.items.size(); ++i) {
    const size_t n = mb.ids.size(1) > 0 ? static_cast<size_t>(mb.attention[static_cast<int64_t>(i)].sum().item<int64_t>()) : 0;
    std::vector<float>& v = t[mb.items[i].episode][mb.items[i].sequence];
    v.assign(n, std::numeric_limits<float>::quiet_NaN());
    for (size_t j = 1; j < n; ++j) v[j] = pv[static_cast<int64_t>(i)][static_cast<int64_t>(j - 1)];
  }
}

at::Tensor targetLogprobs(const at::Tensor& logits, const at::Tensor& ids) {
  const int64_t T = logits.size(1);
  at::Tensor logp = at::log_softmax(logits.narrow(1, 0, T - 1).to(at::kFloat), -1);
  return logp.gather(-1, ids.narrow(1, 1, T - 1).unsqueeze(-1)).squeeze(-1);
}

at::Device processDevice(const TrainOptions& o, const Distributed& d) {
  if (o.device == "cuda" && d.active()) return at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(d.localRank()));
  return llm::parseDevice(o.device);
}

std::string backendFor(const TrainOptions& o) {
  if (o.backend != "auto") return o.backend;
  return o.device.rfind("cuda", 0) == 0 ? "nccl" : "gloo";
}

void StepSums::add(const std::string& name, double value) {
  auto it = std::find(names_.begin(), names_.end(), name);
  if (it == names_.end()) {
    names_.push_back(name);
    values_.push_back(value);
  } else {
    values_[static_cast<size_t>(it - names_.begin())] += value;
  }
}

void StepSums::max(const std::string& name, double value) {
  auto it = std::find(max_names_.begin(), max_names_.end(), name);
  if (it == max_names_.end()) {
    max_names_.push_back(name);
    max_values_.push_back(value);
  } else {
    double& v = max_values_[static_cast<size_t>(it - max_names_.begin())];
    v = std::max(v, value);
  }
}

double StepSums::get(const std::string& name) const {
  for (size_t i = 0; i < names_.size(); ++i)
    if (names_[i] == name) return values_[i];
  for (size_t i = 0; i < max_names_.size(); ++i)
    if (max_names_[i] == name) return max_values_[i];
  return 0.0;
}

void StepSums::reduce(Distributed& d, const at::Device& device) {
  if (!d.active()) return;
  // Every process must add the same names in the same order: the stages
  // add every name on every step, with 0 where a process had no data.
  if (!values_.empty()) {
    std::vector<at::Tensor> t{at::tensor(values_, at::kDouble).to(device)};
    d.allReduceSum(t);
    at::Tensor c = t[0].to(at::kCPU);
    for (size_t i = 0; i < values_.size(); ++i) values_[i] = c[static_cast<int64_t>(i)].item<double>();
  }
  if (!max_values_.empty()) {
    std::vector<at::Tensor> t{at::tensor(max_values_, at::kDouble).to(device)};
    d.allReduceMax(t);
    at::Tensor c = t[0].to(at::kCPU);
    for (size_t i = 0; i < max_values_.size(); ++i) max_values_[i] = c[static_cast<int64_t>(i)].item<double>();
  }
}

void addRewardMetrics(Json& r, const Dataset& d, const std::vector<size_t>& episodes) {
  double sum = 0, n = 0, passed = 0;
  for (size_t e : episodes) {
    if (d.episodes[e].reward) {
      sum += *d.episodes[e].reward;
      ++n;
    }
    passed += d.episodes[e].passed;
  }
  r["mean_reward"] = n > 0 ? Json(sum / n) : Json(nullptr);
  r["pass_rate"] = episodes.empty() ? Json(nullptr) : Json(passed / static_cast<double>(episodes.size()));
  r["episodes"] = episodes.size();
}

void progress(const TrainOptions& o, const Distributed& d, const std::string& line) {
  if (o.progress && d.rank() == 0) std::fprintf(stderr, "kbtrain: %s\n", line.c_str());
}

void synchronize(const at::Device& device) {
  if (device.is_cuda()) at::detail::getCUDAHooks().deviceSynchronize(device.index() < 0 ? 0 : device.index());
}

fs::path metricsPath(const TrainOptions& o) { return o.metrics.empty() ? o.out / "metrics.jsonl" : o.metrics; }

Json optionsJson(const TrainOptions& o) {
  Json files = Json::array();
  for (const auto& f : o.trajectories) files.push_back(f.string());
  return {{"trajectories", files}, {"model", o.model.string()}, {"out", o.out.string()},
          {"device", o.device},    {"dtype", o.dtype},            {"lr", o.lr},
          {"weight_decay", o.weight_decay}, {"warmup_steps", o.warmup_steps},
          {"max_grad_norm", o.max_grad_norm}, {"batch_size", o.batch_size},
          {"micro_batch", o.micro_batch}, {"epochs", o.epochs}, {"max_steps", o.max_steps},
          {"seed", o.seed}, {"shards", o.shards}, {"grad_dtype", o.grad_dtype}, {"max_length", o.max_length}, {"use_recorded_tokens", o.use_recorded_tokens}};
}

}  // namespace kb::rl

namespace kb::rl {

void gaeTables(const Dataset& d, const Sharding& sh, const TokenTable& values, double gamma, double lambda,
               TokenTable& adv, TokenTable& ret) {
  for (size_t e = 0; e < d.episodes.size(); ++e) {
    if (!sh.owns(e)) continue;
    const Episode& ep = d.episodes[e];
    std::vector<double> v;
    for (size_t s = 0; s < ep.sequences.size(); ++s)
      for (size_t j = 0; j < ep.sequences[s].mask.size(); ++j)
        if (ep.sequences[s].mask[j]) v.push_back(values[e][s][j]);
    const std::vector<double> a = gae(terminalRewards(v.size(), ep.reward.value_or(0.0)), v, gamma, lambda);
    size_t k = 0;
    for (size_t s = 0; s < ep.sequences.size(); ++s) {
      const Sequence& seq = ep.sequences[s];
      adv[e][s].assign(seq.ids.size(), 0.f);
      ret[e][s].assign(seq.ids.size(), 0.f);
      for (size_t j = 0; j < seq.mask.size(); ++j)
        if (seq.mask[j]) {
          adv[e][s][j] = static_cast<float>(a[k]);
          ret[e][s][j] = static_cast<float>(a[k] + v[k]);
          ++k;
        }
    }
  }
}

double actionTokens(const Dataset& d, const std::vector<size_t>& episodes) {
  double n = 0;
  for (size_t e : episodes) n += static_cast<double>(d.episodes[e].actionTokens());
  return n;
}

StepSums zeroSums(const std::vector<std::string>& sums, const std::vector<std::string>& maxima) {
  StepSums s;
  for (const std::string& n : sums) s.add(n, 0.0);
  for (const std::string& n : maxima) s.max(n, 0.0);
  return s;
}

void addValueSums(StepSums& sums, const at::Tensor& values, const at::Tensor& returns, const at::Tensor& mask) {
  const at::Tensor res = returns - values.detach();
  sums.add("ev_n", mask.sum().item<double>());
  sums.add("ev_y", (returns * mask).sum().item<double>());
  sums.add("ev_yy", (returns * returns * mask).sum().item<double>());
  sums.add("ev_r", (res * mask).sum().item<double>());
  sums.add("ev_rr", (res * res * mask).sum().item<double>());
}

Json explainedVariance(const StepSums& s) {
  ExplainedVarianceSums ev{s.get("ev_n"), s.get("ev_y"), s.get("ev_yy"), s.get("ev_r"), s.get("ev_rr")};
  return finiteOrNull(ev.value());
}

void finishStep(Json& r, const StepSums& sums, double N, double grad_norm, double seconds, MetricsWriter& metrics,
                const TrainOptions& o, const Distributed& d) {
  r["grad_norm"] = grad_norm;
  r["action_tokens"] = N;
  r["tokens"] = sums.get("tokens");
  r["tokens_per_s"] = sums.get("tokens") / seconds;
  r["seconds"] = seconds;
  metrics.write(r);
  progress(o, d, progressLine(r));
}

AdamWOptions adamOptions(const TrainOptions& o, double lr) {
  AdamWOptions a;
  a.lr = lr;
  a.beta1 = o.beta1;
  a.beta2 = o.beta2;
  a.eps = o.adam_eps;
  a.weight_decay = o.weight_decay;
  a.warmup_steps = o.warmup_steps;
  return a;
}

// V(s_t) of every owned sequence of `episodes` into `table` (no gradient).
void criticValues(const Critic& critic, const Dataset& data, const Sharding& sh,
                  const std::vector<size_t>& episodes, int64_t micro, const at::Device& device, TokenTable& table) {
  at::NoGradGuard no_grad;
  for (const MicroBatch& mb : microBatches(data, ownedSequences(data, sh, episodes), micro, device)) {
    const at::Tensor v = critic.values(mb.ids, mb.attention);
    scatterTable(table, mb, v.narrow(1, 0, v.size(1) - 1));
  }
}

// log pi_old of every owned sequence of `episodes` into `table` (no gradient).
void policyLogprobs(const llm::Model& model, const Dataset& data, const Sharding& sh,
                    const std::vector<size_t>& episodes, int64_t micro, const at::Device& device, TokenTable& table) {
  at::NoGradGuard no_grad;
  for (const MicroBatch& mb : microBatches(data, ownedSequences(data, sh, episodes), micro, device))
    scatterTable(table, mb, targetLogprobs(model.forward(mb.ids, mb.attention), mb.ids));
}

Update applyUpdate(Distributed& d, Gradients& grads, AdamW& optimizer, double max_grad_norm) {
  Update u;
  d.allReduceGradients(grads.buffers());
  u.grad_norm = grads.clipNorm(max_grad_norm);
  u.lr = optimizer.step(grads.buffers());
  grads.zero();
  return u;
}

}  // namespace kb::rl
