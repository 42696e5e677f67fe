#include "synth/compose.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "core/error.h"
#include "core/hash.h"
#include "core/paths.h"
#include "synth/ops.h"
#include "synth/rng.h"

namespace fs = std::filesystem;

namespace kb::synth {

// ---- catalog -------------------------------------------------------------------

fs::path defaultCatalogPath() {
  if (const char* env = std::getenv("KB_SYNTH_SEEDS"); env && *env) return env;
  return dataPath("testdata/synth/seeds.json");
}

Catalog loadCatalog(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw UsageError(path.string() + ": cannot read the seed catalog (make it with scripts/fixtures/synth_seeds.py)");
  std::stringstream ss;
  ss << f.rdbuf();
  std::string text = ss.str();
  Json doc = Json::parse(text, nullptr, false);
  if (!doc.is_object() || doc.value("format", "") != "kb-synth-seeds" || !doc.contains("ops") || !doc["ops"].is_array())
    throw UsageError(path.string() + ": not a kbsynth seed catalog (format kb-synth-seeds)");
  if (doc.value("format_version", 0) != 1)
    throw UsageError(path.string() + ": seed catalog format_version " + std::to_string(doc.value("format_version", 0)) +
                     ", this kbsynth reads 1 (regenerate it with scripts/fixtures/synth_seeds.py)");
  Catalog c;
  c.path = path;
  c.sha256 = "sha256:" + sha256Hex(text);
  c.torch_version = doc.value("torch_version", "");
  c.transformers_version = doc["transformers_version"].is_string() ? doc["transformers_version"].get<std::string>() : "";
  c.prelude = doc.value("prelude", "");
  c.counts = doc.value("counts", Json::object());
  for (const auto& e : doc["ops"]) {
    c.entries.push_back(e);
    if (e.value("status", "") != "composable") continue;
    SeedOp op;
    try {
      op.name = e.at("name");
      op.kind = e.at("kind");
      op.source = e.at("source");
      op.rule = e.at("rule");
      op.ranks = e.at("ranks").get<std::vector<int>>();
      op.terminal = e.value("terminal", false);
    } catch (const Json::exception& ex) {
      throw UsageError(path.string() + ": malformed composable entry " + e.value("name", "?") + ": " + ex.what());
    }
    op.entry = e;
    (op.rule == "transformers" ? c.transformers : c.ops).push_back(std::move(op));
  }
  if (c.ops.empty()) throw UsageError(path.string() + ": no composable operators in the catalog");
  return c;
}

// ---- mix and profiles ----------------------------------------------------------

Mix Mix::parse(const std::string& text) {
  Mix m;
  if (text.empty() || text == "paper") return m;
  std::fill(std::begin(m.w), std::end(m.w), 0.0);
  std::stringstream ss(text);
  std::string part;
  while (std::getline(ss, part, ',')) {
    auto colon = part.find(':');
    if (colon == std::string::npos) throw UsageError("--mix: \"" + part + "\" is not KEY:WEIGHT");
    std::string key = part.substr(0, colon);
    double w = 0;
    try {
      size_t used = 0;
      w = std::stod(part.substr(colon + 1), &used);
      if (used != part.size() - colon - 1) throw std::invalid_argument(part);
    } catch (const std::exception&) {
      throw UsageError("--mix: weight of \"" + key + "\" is not a number");
    }
    if (w < 0 || !std::isfinite(w)) throw UsageError("--mix: weights must be non-negative");
    int slot = key == "transformers" || key == "t" ? 5 : (key.size() == 1 && key[0] >= '1' && key[0] <= '5' ? key[0] - '1' : -1);
    if (slot < 0) throw UsageError("--mix: key \"" + key + "\" is not 1-5 or transformers");
    m.w[slot] = w;
  }
  double total = 0;
  for (double w : m.w) total += w;
  if (total <= 0) throw UsageError("--mix: all weights are zero");
  return m;
}

std::string Mix::str() const {
  std::ostringstream s;
  for (int i = 0; i < 6; ++i) s << (i ? "," : "") << (i == 5 ? std::string("transformers") : std::to_string(i + 1)) << ":" << w[i];
  return s.str();
}

Json Mix::json() const {
  double total = 0;
  for (double x : w) total += x;
  Json j = Json::object();
  for (int i = 0; i < 6; ++i) j[i == 5 ? std::string("transformers") : std::to_string(i + 1)] = w[i] / total;
  return j;
}

Profile Profile::byName(const std::string& name) {
  Profile p;
  p.name = name;
  if (name == "gpu") {
    p.batch_lo = 4; p.batch_hi = 32;
    p.feat_lo = 128; p.feat_hi = 4096;
    p.chan_lo = 8; p.chan_hi = 128;
    p.len_lo = 128; p.len_hi = 2048;
    p.hw_lo = 16; p.hw_hi = 128;
    p.dhw_lo = 8; p.dhw_hi = 32;
    p.seq_lo = 64; p.seq_hi = 1024;
    p.round_to = 16;
    p.target_ms_lo = 2.0; p.target_ms_hi = 30.0;
    p.max_elements = int64_t(1) << 29;        // 2 GiB of float32
    p.max_total_elements = int64_t(1) << 30;  // 4 GiB (a dozen parallel filter workers share one GPU)
  } else if (name == "tiny") {
    p.batch_lo = 2; p.batch_hi = 4;
    p.feat_lo = 8; p.feat_hi = 48;
    p.chan_lo = 4; p.chan_hi = 16;
    p.len_lo = 8; p.len_hi = 32;
    p.hw_lo = 6; p.hw_hi = 12;
    p.dhw_lo = 4; p.dhw_hi = 6;
    p.seq_lo = 4; p.seq_hi = 12;
    p.round_to = 4;
    p.max_elements = int64_t(1) << 17;
    p.max_total_elements = int64_t(1) << 19;
  } else {
    throw UsageError("--profile must be gpu or tiny, not \"" + name + "\"");
  }
  return p;
}

int opCountFor(const Mix& mix, uint64_t seed, uint64_t index) {
  // Weyl sequence u_i = frac(offset + i * (golden ratio - 1)): evenly spread
  // over [0, 1) for every prefix; the inverse CDF of the mix maps it to a kind.
  double offset = static_cast<double>(mix64(seed) >> 11) * 0x1.0p-53;
  double u = std::fmod(offset + static_cast<double>(index + 1) * 0.6180339887498949, 1.0);
  double total = 0;
  for (double w : mix.w) total += w;
  double acc = 0;
  for (int i = 0; i < 6; ++i) {
    acc += mix.w[i] / total;
    if (u < acc) return i == 5 ? 0 : i + 1;
  }
  for (int i = 5; i >= 0; --i)
    if (mix.w[i] > 0) return i == 5 ? 0 : i + 1;
  return 2;
}

// ---- Python text -----------------------------------------------------------------

std::string pyLiteral(const Json& v) {
  if (v.is_boolean()) return v.get<bool>() ? "True" : "False";
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number_float()) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", v.get<double>());
    std::string s = buf;
    if (s.find_first_of(".einn") == std::string::npos) s += ".0";
    return s;
  }
  if (v.is_string()) return "\"" + v.get<std::string>() + "\"";
  if (v.is_array()) {
    std::string s = "(";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + pyLiteral(v[i]);
    return s + (v.size() == 1 ? ",)" : ")");
  }
  if (v.is_null()) return "None";
  return v.dump();
}

std::string pyName(const std::string& n) {
  if (n.rfind("torch.nn.functional.", 0) == 0) return "F." + n.substr(20);
  if (n.rfind("torch.nn.", 0) == 0) return "nn." + n.substr(9);
  return n;
}

namespace {

std::string render(const Emitter& em, const std::string& doc, const std::string& prelude, const std::string& extra_defs) {
  std::ostringstream s;
  if (prelude.empty()) {
    s << "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n";
  } else {
    s << prelude;
  }
  if (!extra_defs.empty()) s << "\n\n" << extra_defs;
  s << "\n\nclass Model(nn.Module):\n    \"\"\"" << doc << "\"\"\"\n\n    def __init__(self";
  for (const auto& p : em.init_params) s << ", " << p;
  s << "):\n        super().__init__()\n";
  for (const auto& l : em.init_lines) s << "        " << l << "\n";
  s << "\n    def forward(self";
  for (const auto& a : em.forward_args) s << ", " << a;
  s << "):\n";
  for (const auto& l : em.forward_lines) s << "        " << l << "\n";
  s << "        return x\n\n\n";
  for (const auto& [n, v] : em.consts) s << n << " = " << v << "\n";
  s << "\n\ndef get_inputs():\n    return [";
  for (size_t i = 0; i < em.input_exprs.size(); ++i) s << (i ? ", " : "") << em.input_exprs[i];
  s << "]\n\n\ndef get_init_inputs():\n    return [";
  for (size_t i = 0; i < em.init_params.size(); ++i) s << (i ? ", " : "") << em.init_params[i];
  s << "]\n";
  return s.str();
}

double estimateMs(const std::vector<Step>& steps, const Profile& p) {
  double ms = 0;
  for (const auto& s : steps) ms += std::max(s.flops / p.flops_per_ms, s.bytes / p.bytes_per_ms) + p.launch_ms;
  return ms;
}

// Footprint and per-tensor check; returns the total element count or -1.
int64_t footprint(const Shape& x, const std::vector<Step>& steps, const Profile& p) {
  int64_t total = numel(x);
  if (numel(x) > p.max_elements) return -1;
  for (const auto& s : steps) {
    auto add = [&](const Shape& t) {
      total += numel(t);
      return numel(t) <= p.max_elements;
    };
    if (!add(s.out)) return -1;
    for (const auto& e : s.extra_inputs)
      if (!add(e)) return -1;
    for (const auto& q : s.parameters)
      if (!add(q)) return -1;
  }
  return total <= p.max_total_elements ? total : -1;
}

bool reinfer(std::vector<Step>& steps, const Shape& x) {
  Shape cur = x;
  for (auto& s : steps) {
    if (!inferStep(s, cur)) return false;
    cur = s.out;
  }
  return true;
}

// Rescales the batch (dim 0) towards the target time within the memory
// limits. Returns false when even a batch of 2 does not fit.
bool scaleBatch(Shape& x, std::vector<Step>& steps, const Profile& p, Rng& rng) {
  double b = static_cast<double>(x[0]);
  if (p.target_ms_hi > 0) {
    double target = std::exp(rng.uniform(std::log(p.target_ms_lo), std::log(p.target_ms_hi)));
    double est = estimateMs(steps, p);
    b = std::clamp(b * target / std::max(est, 1e-6), 2.0, 1.0e8);
  }
  auto fits = [&](int64_t batch) {
    Shape y = x;
    y[0] = batch;
    return reinfer(steps, y) && footprint(y, steps, p) >= 0;
  };
  // The largest batch in [2, b] that fits (fitting is monotone in the batch).
  int64_t hi = std::max<int64_t>(2, static_cast<int64_t>(b));
  if (!fits(hi)) {
    if (!fits(2)) return false;
    int64_t lo = 2;
    while (hi - lo > 1) {
      int64_t mid = lo + (hi - lo) / 2;
      (fits(mid) ? lo : hi) = mid;
    }
    hi = lo;
  }
  x[0] = hi;
  return reinfer(steps, x);
}

std::string opLabel(const SeedOp& op) {
  auto p = op.name.rfind('.');
  return op.name.substr(p + 1);
}

Composed composeTransformers(const Catalog& cat, const Profile& p, uint64_t seed, uint64_t index) {
  Composed c;
  c.category = "transformers";
  c.op_count = 1;
  if (cat.transformers.empty()) {
    c.error = "the catalog has no composable transformers modules";
    return c;
  }
  Rng rng(seed, index, 1000);
  const SeedOp& op = rng.pick(cat.transformers);
  const Json& e = op.entry;
  std::map<std::string, int64_t> dims;
  for (auto it = e["dims"].begin(); it != e["dims"].end(); ++it) {
    int64_t lo = it.value()[0], hi = it.value()[1];
    if (p.name == "tiny") lo = p.feat_lo, hi = p.feat_hi;
    dims[it.key()] = sampleSize(rng, lo, hi, std::max<int64_t>(p.round_to, p.name == "tiny" ? 4 : 64));
  }
  int64_t seq = sampleSize(rng, p.seq_lo, p.seq_hi, p.round_to);
  int64_t hidden = dims.count("hidden") ? dims["hidden"] : 256;
  int64_t inter = dims.count("intermediate") ? dims["intermediate"] : hidden;
  double b = static_cast<double>(rng.range(p.batch_lo, p.batch_hi));
  bool mlp = e.value("cost", "memory") == "mlp";
  int n_proj = e.value("n_proj", 1);
  auto est = [&](double batch) {
    double tokens = batch * static_cast<double>(seq);
    double flops = mlp ? 2.0 * tokens * hidden * inter * n_proj : tokens * hidden * 8.0;
    double bytes = 4.0 * tokens * (mlp ? (2.0 * hidden + 3.0 * inter) : 4.0 * hidden);
    return std::max(flops / p.flops_per_ms, bytes / p.bytes_per_ms) + p.launch_ms * (mlp ? 5 : 6);
  };
  if (p.target_ms_hi > 0) {
    double target = std::exp(rng.uniform(std::log(p.target_ms_lo), std::log(p.target_ms_hi)));
    b = std::max(1.0, std::round(b * target / est(b)));
  }
  auto fits = [&](int64_t batch) {
    int64_t tokens = batch * seq;
    int64_t widest = tokens * std::max(hidden, inter);
    return widest <= p.max_elements && tokens * (2 * hidden + 3 * inter) <= p.max_total_elements;
  };
  int64_t batch = static_cast<int64_t>(b);
  while (batch > 1 && !fits(batch)) batch = batch * 7 / 10;
  if (!fits(batch)) {
    c.error = "no batch fits the memory limits";
    return c;
  }
  Emitter em;
  em.unique("SimpleNamespace");
  em.consts = {{"batch_size", std::to_string(batch)}, {"seq_len", std::to_string(seq)}};
  em.used.insert({"batch_size", "seq_len", "ACT2FN", "Optional", "Tuple", "Tensor"});
  std::map<std::string, std::string> var;  // dim -> constant name
  for (const auto& [d, v] : dims) var[d] = em.initParam(d + "_size", std::to_string(v));
  std::string cls = e.at("class_name");
  std::string ctor;
  if (e.contains("config")) {
    ctor = cls + "(SimpleNamespace(";
    bool first = true;
    for (auto it = e["config"].begin(); it != e["config"].end(); ++it) {
      std::string val = it.value().is_string() && var.count(it.value().get<std::string>())
                            ? var[it.value().get<std::string>()]
                            : pyLiteral(it.value());
      ctor += (first ? "" : ", ") + it.key() + "=" + val;
      first = false;
    }
    ctor += "))";
  } else {
    ctor = cls + "(";
    bool first = true;
    for (const auto& d : e.value("init", Json::array())) {
      ctor += (first ? "" : ", ") + var[d.get<std::string>()];
      first = false;
    }
    const Json init_kw = e.value("init_kw", Json::object());
    for (auto it = init_kw.begin(); it != init_kw.end(); ++it) {
      ctor += (first ? "" : ", ") + it.key() + "=" + pyLiteral(it.value());
      first = false;
    }
    ctor += ")";
  }
  em.init_lines.push_back("self.block = " + ctor);
  em.forward_args = {"x"};
  em.forward_lines.push_back("x = self.block(x)");
  em.input_exprs = {"torch.randn(batch_size, seq_len, " + var["hidden"] + ")"};
  std::string doc = "Standalone transformers module " + cls + " (" + op.name + ", transformers " +
                    cat.transformers_version + "), its source inlined so the task needs only torch.";
  c.code = render(em, doc, cat.prelude, e.value("module_source", ""));
  c.ops = {op.name};
  c.inputs = {{batch, seq, hidden}};
  c.output = e.value("output", "") == "pooled" ? Shape{batch, hidden} : Shape{batch, seq, hidden};
  Step s;
  s.op = &op;
  s.params = {{"dims", dims}, {"seq_len", seq}};
  s.in = c.inputs[0];
  s.out = c.output;
  c.steps.push_back(s);
  c.est_ms = est(static_cast<double>(batch));
  c.total_elements = batch * seq * (2 * hidden + 3 * inter);
  c.ok = true;
  return c;
}

}  // namespace

Composed sampleChain(const Catalog& cat, const Profile& p, int op_count, uint64_t seed, uint64_t index) {
  Composed c;
  c.op_count = op_count;
  c.category = op_count == 1 ? "single" : "fused";
  // Operators are drawn uniformly over rules, then uniformly within the rule
  // (else the ~60 elementwise activations would crowd out everything else).
  std::map<std::string, int> per_rule;
  for (const auto& op : cat.ops) ++per_rule[op.rule];
  std::vector<double> w_any, w_first;
  for (const auto& op : cat.ops) {
    double w = 1.0 / per_rule[op.rule];
    w_any.push_back(w);
    bool view = op.rule == "flatten" || op.rule == "transpose";
    w_first.push_back(op.terminal && op_count > 1 ? 0.0 : (view && op_count == 1 ? 0.0 : w));
  }
  for (int attempt = 0; attempt < 200; ++attempt) {
    Rng rng(seed, index, static_cast<uint64_t>(attempt));
    const SeedOp& first = cat.ops[rng.weighted(w_first)];
    std::vector<std::string> names;
    Shape x = firstShape(first, rng, p, names);
    std::vector<Step> steps(1);
    if (!sampleStep(first, x, rng, p, steps[0])) continue;
    bool ok = true;
    for (int k = 1; k < op_count && ok; ++k) {
      bool last = k == op_count - 1;
      ok = false;
      for (int tries = 0; tries < 40 && !ok; ++tries) {
        const SeedOp& op = cat.ops[rng.weighted(w_any)];
        if ((op.terminal && !last) || op.name == steps.back().op->name) continue;
        if (steps.back().op->terminal) break;
        Step s;
        if (sampleStep(op, steps.back().out, rng, p, s)) {
          steps.push_back(s);
          ok = true;
        }
      }
    }
    if (!ok) continue;
    if (!scaleBatch(x, steps, p, rng)) continue;
    // The program.
    Emitter em;
    for (size_t i = 0; i < names.size(); ++i) {
      em.used.insert(names[i]);
      em.consts.emplace_back(names[i], std::to_string(x[i]));
    }
    em.unique("x");
    std::string main = "torch.randn(";
    for (size_t i = 0; i < names.size(); ++i) main += (i ? ", " : "") + names[i];
    em.input_exprs.push_back(main + ")");
    em.forward_args.push_back("x");
    std::string chain;
    for (const auto& s : steps) {
      emitStep(s, em);
      chain += (chain.empty() ? "" : " -> ") + opLabel(*s.op);
    }
    c.code = render(em, chain + " (kbsynth rule composer)", "", "");
    c.steps = steps;
    c.inputs = {x};
    for (const auto& s : steps)
      for (const auto& e : s.extra_inputs) c.inputs.push_back(e);
    for (const auto& s : steps) c.ops.push_back(s.op->name);
    c.output = steps.back().out;
    c.output_dtype = steps.back().out_dtype;
    c.est_ms = estimateMs(steps, p);
    c.total_elements = footprint(x, steps, p);
    c.attempts = attempt + 1;
    c.ok = true;
    return c;
  }
  c.error = "no shape-compatible chain of " + std::to_string(op_count) + " operators found in 200 attempts";
  return c;
}

Composed composeRule(const Catalog& cat, const Profile& p, const Mix& mix, uint64_t seed, uint64_t index) {
  int n = opCountFor(mix, seed, index);
  if (n == 0) return composeTransformers(cat, p, seed, index);
  return sampleChain(cat, p, n, seed, index);
}

Json Composed::json() const {
  Json steps_j = Json::array();
  for (const auto& s : steps)
    steps_j.push_back({{"op", s.op ? s.op->name : ""}, {"rule", s.op ? s.op->rule : ""}, {"params", s.params},
                       {"in", s.in}, {"out", s.out}});
  return {{"category", category}, {"op_count", op_count}, {"ops", ops}, {"steps", steps_j},
          {"inputs", inputs}, {"output", {{"shape", output}, {"dtype", output_dtype}}},
          {"est_ms", std::round(est_ms * 1000.0) / 1000.0}, {"elements", total_elements}};
}

}  // namespace kb::synth
