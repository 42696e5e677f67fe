#include "synth/ops.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace kb::synth {

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}

std::string shapeText(const Shape& s) {
  std::string t = "(";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + (s.size() == 1 ? ",)" : ")");
}

int64_t sampleSize(Rng& rng, int64_t lo, int64_t hi, int64_t round_to) {
  int64_t v = rng.logRange(lo, hi);
  if (round_to > 1 && v >= round_to) v = (v + round_to / 2) / round_to * round_to;
  return std::max<int64_t>(1, v);
}

// ---- the emitter -------------------------------------------------------------

std::string Emitter::unique(const std::string& base) {
  if (used.empty()) used = {"x", "torch", "nn", "F", "Model", "get_inputs", "get_init_inputs", "self", "math"};
  std::string name = base;
  for (int n = 2; used.count(name); ++n) name = base + "_" + std::to_string(n);
  used.insert(name);
  return name;
}

std::string Emitter::initParam(const std::string& base, const std::string& value) {
  for (const auto& [n, v] : consts) {
    if (n == base && v == value) {
      if (std::find(init_params.begin(), init_params.end(), n) == init_params.end()) init_params.push_back(n);
      return n;
    }
  }
  std::string name = unique(base);
  consts.emplace_back(name, value);
  init_params.push_back(name);
  return name;
}

std::string Emitter::input(const std::string& base, const Shape& shape, bool batched) {
  std::string name = unique(base);
  std::string expr = "torch.randn(";
  for (size_t i = 0; i < shape.size(); ++i)
    expr += (i ? ", " : "") + ((i == 0 && batched) ? std::string("batch_size") : std::to_string(shape[i]));
  input_exprs.push_back(expr + ")");
  forward_args.push_back(name);
  return name;
}

// ---- helpers -------------------------------------------------------------------

namespace {

double round3(double v) { return std::round(v * 1000.0) / 1000.0; }

// The catalog's "args" of op, sampled: name -> value.
Json sampleArgs(const SeedOp& op, Rng& rng) {
  Json out = Json::object();
  if (!op.entry.contains("args")) return out;
  for (const auto& a : op.entry["args"]) {
    std::string type = a.value("type", "");
    if (type == "float") {
      out[a["name"].get<std::string>()] = round3(rng.uniform(a["range"][0].get<double>(), a["range"][1].get<double>()));
    } else if (type == "int") {
      out[a["name"].get<std::string>()] = rng.range(a["range"][0].get<int64_t>(), a["range"][1].get<int64_t>());
    } else if (type == "choice") {
      std::vector<Json> c(a["choices"].begin(), a["choices"].end());
      out[a["name"].get<std::string>()] = rng.pick(c);
    } else if (type == "bool") {
      out[a["name"].get<std::string>()] = rng.coin();
    }
  }
  return out;
}

std::string lastName(const std::string& name) {
  auto p = name.rfind('.');
  return p == std::string::npos ? name : name.substr(p + 1);
}

// Attribute name of a module: its class name in lower case ("conv2d", "leakyrelu").
std::string attrName(const SeedOp& op) {
  std::string s = lastName(op.name);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::string kwargs(const Json& args, const std::vector<std::string>& skip = {}) {
  std::string s;
  for (auto it = args.begin(); it != args.end(); ++it) {
    if (std::find(skip.begin(), skip.end(), it.key()) != skip.end()) continue;
    s += ", " + it.key() + "=" + pyLiteral(it.value());
  }
  return s;
}

int spatialOf(const SeedOp& op) { return op.entry.value("spatial", 0); }

// Reads a sampled argument, with a default.
template <class T>
T arg(const Step& s, const char* name, T def) {
  if (s.params.contains("args") && s.params["args"].contains(name)) return s.params["args"][name].get<T>();
  return def;
}

Shape paramShapeFor(const Shape& in) {
  if (in.size() >= 3) {
    Shape p(in.size() - 1, 1);
    p[0] = in[1];
    return p;
  }
  if (in.size() == 2) return {in[1]};
  return {1};
}

// A dim in [1, rank-1] whose size is above 1 (-1 when none).
int pickDim(const Shape& in, Rng& rng) {
  std::vector<int> dims;
  for (int d = 1; d < static_cast<int>(in.size()); ++d)
    if (in[d] > 1) dims.push_back(d);
  return dims.empty() ? -1 : rng.pick(dims);
}

void memCost(Step& s, double passes = 1.0) {
  double n = static_cast<double>(numel(s.in) + numel(s.out));
  for (const auto& e : s.extra_inputs) n += static_cast<double>(numel(e));
  for (const auto& p : s.parameters) n += static_cast<double>(numel(p));
  s.bytes = 4.0 * n * passes;
  if (s.flops == 0) s.flops = static_cast<double>(std::max(numel(s.in), numel(s.out)));
}

}  // namespace

// ---- first shapes ----------------------------------------------------------------

Shape firstShape(const SeedOp& op, Rng& rng, const Profile& p, std::vector<std::string>& names) {
  int rank = rng.pick(op.ranks);
  const std::string& r = op.rule;
  int64_t b = rng.range(p.batch_lo, p.batch_hi);
  auto chan = [&] { return sampleSize(rng, p.chan_lo, p.chan_hi, p.round_to); };
  auto feat = [&] { return sampleSize(rng, p.feat_lo, p.feat_hi, p.round_to); };
  if (r == "attention") {
    names = {"batch_size", "num_heads", "seq_len", "head_dim"};
    return {b, rng.range(2, p.name == "tiny" ? 4 : 16), sampleSize(rng, p.seq_lo, p.seq_hi, p.round_to),
            p.name == "tiny" ? rng.range(4, 16) : rng.pick(std::vector<int64_t>{32, 64, 128})};
  }
  bool sequence = (r == "linear" || r == "last_norm" || r == "glu" || r == "matmul");
  switch (rank) {
    case 1:
      names = {"batch_size"};
      return {b * feat()};
    case 2:
      names = {"batch_size", "in_features"};
      return {b, feat()};
    case 3:
      if (sequence) {
        names = {"batch_size", "seq_len", "in_features"};
        return {b, sampleSize(rng, p.seq_lo, p.seq_hi, p.round_to), feat()};
      }
      names = {"batch_size", "in_channels", "length"};
      return {b, chan(), rng.range(p.len_lo, p.len_hi)};
    case 4:
      names = {"batch_size", "in_channels", "height", "width"};
      {
        int64_t hw = rng.range(p.hw_lo, p.hw_hi);
        return {b, chan(), hw, rng.coin(0.7) ? hw : rng.range(p.hw_lo, p.hw_hi)};
      }
    default:
      names = {"batch_size", "in_channels", "depth", "height", "width"};
      {
        int64_t hw = rng.range(p.dhw_lo, p.dhw_hi);
        return {b, chan(), rng.range(p.dhw_lo, p.dhw_hi), hw, hw};
      }
  }
}

// ---- sampling ------------------------------------------------------------------

bool sampleStep(const SeedOp& op, const Shape& in, Rng& rng, const Profile& p, Step& s) {
  int rank = static_cast<int>(in.size());
  if (std::find(op.ranks.begin(), op.ranks.end(), rank) == op.ranks.end()) return false;
  s = Step{};
  s.op = &op;
  s.params = Json::object();
  const std::string& r = op.rule;
  Json args = sampleArgs(op, rng);
  if (r == "binary") {
    std::vector<std::string> operands;
    for (const auto& o : op.entry["operands"]) operands.push_back(o.get<std::string>());
    std::string operand = rng.pick(operands);
    s.params["operand"] = operand;
    if (operand == "scalar") {
      double lo = op.entry["scalar_range"][0], hi = op.entry["scalar_range"][1];
      double v = round3(rng.uniform(lo, hi));
      if (std::fabs(v) < 0.1) v = v < 0 ? -0.5 : 0.5;
      s.params["scalar"] = v;
    }
  } else if (r == "linear" || r == "matmul") {
    s.params["out_features"] = sampleSize(rng, p.feat_lo, p.feat_hi, p.round_to);
  } else if (r == "conv") {
    s.params["out_channels"] = sampleSize(rng, p.chan_lo, p.chan_hi, p.round_to);
  } else if (r == "group_norm") {
    std::vector<int64_t> ok;
    for (const auto& g : op.entry["args"][0]["choices"])
      if (in[1] % g.get<int64_t>() == 0 && in[1] > g.get<int64_t>()) ok.push_back(g.get<int64_t>());
    if (ok.empty()) return false;
    args["num_groups"] = rng.pick(ok);
  } else if (r == "dim" || r == "reduce" || r == "pairwise") {
    int d = r == "pairwise" ? 1 : pickDim(in, rng);
    if (d < 0 || in[d] < 2) return false;
    s.params["dim"] = d;
  } else if (r == "transpose") {
    if (rank < 3) return false;
    int a = static_cast<int>(rng.range(1, rank - 1)), b = static_cast<int>(rng.range(1, rank - 2));
    if (b >= a) ++b;
    s.params["dim0"] = std::min(a, b);
    s.params["dim1"] = std::max(a, b);
    if (in[a] == in[b] && in[a] == 1) return false;
  } else if (r == "transformers") {
    return false;  // standalone only (compose.cpp)
  }
  s.params["args"] = args;
  return inferStep(s, in);
}

// ---- shape inference -----------------------------------------------------------

bool inferStep(Step& s, const Shape& in) {
  const SeedOp& op = *s.op;
  const std::string& r = op.rule;
  int rank = static_cast<int>(in.size());
  s.in = in;
  s.out = in;
  s.extra_inputs.clear();
  s.parameters.clear();
  s.flops = 0;
  s.bytes = 0;
  s.out_dtype = op.entry.value("out_dtype", "float32");
  double passes = 1.0;
  if (r == "elementwise") {
    if (op.name == "torch.nn.PReLU") s.parameters.push_back({1});
  } else if (r == "binary") {
    std::string operand = s.params["operand"];
    if (operand == "parameter") s.parameters.push_back(paramShapeFor(in));
    if (operand == "input") s.extra_inputs.push_back(in);
  } else if (r == "linear") {
    int64_t outf = s.params["out_features"];
    s.out.back() = outf;
    s.parameters.push_back({outf, in.back()});
    s.flops = 2.0 * static_cast<double>(numel(in)) * static_cast<double>(outf);
  } else if (r == "matmul") {
    int64_t n = s.params["out_features"];
    s.extra_inputs.push_back(rank == 2 ? Shape{in[1], n} : Shape{in[0], in[2], n});
    s.out.back() = n;
    s.flops = 2.0 * static_cast<double>(numel(in)) * static_cast<double>(n);
  } else if (r == "attention") {
    s.extra_inputs = {in, in};
    s.flops = 4.0 * static_cast<double>(numel(in)) * static_cast<double>(in[2]);
  } else if (r == "conv") {
    int sp = spatialOf(op);
    int64_t k = arg<int64_t>(s, "kernel_size", 3), st = arg<int64_t>(s, "stride", 1), pad = arg<int64_t>(s, "padding", 0);
    int64_t cout = s.params["out_channels"];
    bool tr = op.entry.value("transposed", false);
    s.out[1] = cout;
    for (int i = 0; i < sp; ++i) {
      int64_t L = in[2 + i];
      int64_t o = tr ? (L - 1) * st - 2 * pad + k : (L + 2 * pad - k) / st + 1;
      if (o < 1 || (!tr && L + 2 * pad < k)) return false;
      s.out[2 + i] = o;
    }
    int64_t kk = 1;
    for (int i = 0; i < sp; ++i) kk *= k;
    s.parameters.push_back({cout, in[1], kk});
    s.flops = 2.0 * static_cast<double>(tr ? numel(in) * cout : numel(s.out) * in[1]) * static_cast<double>(kk);
  } else if (r == "pool") {
    int sp = spatialOf(op);
    int64_t k = arg<int64_t>(s, "kernel_size", 2), st = arg<int64_t>(s, "stride", 2);
    for (int i = 0; i < sp; ++i) {
      int64_t L = in[2 + i];
      if (L < k) return false;
      s.out[2 + i] = (L - k) / st + 1;
    }
  } else if (r == "adaptive_pool") {
    int sp = spatialOf(op);
    int64_t o = arg<int64_t>(s, "output_size", 1);
    for (int i = 0; i < sp; ++i) {
      if (in[2 + i] < o) return false;
      s.out[2 + i] = o;
    }
  } else if (r == "channel_norm") {
    if (numel(in) / in[1] < 2) return false;  // training-mode statistics need two values per channel
    if (lastName(op.name).rfind("InstanceNorm", 0) == 0 && numel(in) / (in[0] * in[1]) < 2) return false;
    if (lastName(op.name).rfind("BatchNorm", 0) == 0 || arg<bool>(s, "affine", false))
      s.parameters = {{in[1]}, {in[1]}};
    passes = 2.0;
  } else if (r == "group_norm") {
    int64_t g = arg<int64_t>(s, "num_groups", 1);
    if (in[1] % g != 0) return false;
    s.parameters = {{in[1]}, {in[1]}};
    passes = 2.0;
  } else if (r == "last_norm") {
    if (in.back() < 2) return false;
    s.parameters = {{in.back()}};
    passes = 2.0;
  } else if (r == "upsample") {
    for (int i = 2; i < rank; ++i) s.out[i] = in[i] * 2;
  } else if (r == "pixel_shuffle") {
    int64_t f = arg<int64_t>(s, "upscale_factor", 2);
    if (in[1] % (f * f) != 0) return false;
    s.out = {in[0], in[1] / (f * f), in[2] * f, in[3] * f};
  } else if (r == "pad") {
    int64_t pd = arg<int64_t>(s, "pad", 1);
    for (int i = 2; i < rank; ++i) s.out[i] = in[i] + 2 * pd;
  } else if (r == "glu") {
    if (in.back() % 2 != 0 || in.back() < 2) return false;
    s.out.back() = in.back() / 2;
  } else if (r == "dim") {
    int d = s.params["dim"];
    if (d >= rank || in[d] < 2) return false;
    passes = 2.0;
  } else if (r == "reduce") {
    int d = s.params["dim"];
    if (d >= rank || in[d] < 2) return false;
    if (arg<bool>(s, "keepdim", false)) {
      s.out[d] = 1;
    } else {
      s.out.erase(s.out.begin() + d);
    }
  } else if (r == "flatten") {
    s.out = {in[0], numel(in) / in[0]};
  } else if (r == "transpose") {
    int a = s.params["dim0"], b = s.params["dim1"];
    if (a >= rank || b >= rank) return false;
    std::swap(s.out[a], s.out[b]);
  } else if (r == "loss") {
    s.extra_inputs.push_back(in);
    s.out = {};
  } else if (r == "pairwise") {
    s.extra_inputs.push_back(in);
    s.out.erase(s.out.begin() + 1);
  } else {
    return false;
  }
  for (auto d : s.out)
    if (d < 1) return false;
  memCost(s, passes);
  return true;
}

// ---- Python ------------------------------------------------------------------

void emitStep(const Step& s, Emitter& em) {
  const SeedOp& op = *s.op;
  const std::string& r = op.rule;
  const std::string fn = pyName(op.name);
  const Json& args = s.params.contains("args") ? s.params["args"] : Json::object();
  bool module = op.kind == "module";
  auto fwd = [&](const std::string& line) { em.forward_lines.push_back(line); };
  // A module member: self.<attr> = <ctor>; forward x = self.<attr>(x<extra>).
  auto member = [&](const std::string& ctor, const std::string& extra = "") {
    std::string a = em.unique(attrName(op));
    em.init_lines.push_back("self." + a + " = " + ctor);
    fwd("x = self." + a + "(x" + extra + ")");
  };
  if (r == "elementwise") {
    std::string xin = op.entry.value("domain", "any") == "positive" ? "x.abs() + 1.0" : "x";
    if (module) {
      std::string k = kwargs(args);
      member(fn + "(" + (k.empty() ? "" : k.substr(2)) + ")");
    } else {
      fwd("x = " + fn + "(" + xin + kwargs(args) + ")");
    }
  } else if (r == "binary") {
    std::string operand = s.params["operand"];
    std::string base = lastName(op.name);
    if (operand == "scalar") {
      fwd("x = " + fn + "(x, " + pyLiteral(s.params["scalar"]) + ")");
    } else if (operand == "parameter") {
      std::string what = base == "mul" ? "scale" : (base == "add" || base == "sub") ? "bias" : "threshold";
      std::string shape_name = em.initParam(what + "_shape", shapeText(s.parameters[0]));
      std::string a = em.unique(what);
      std::string init = what == "scale" ? "torch.randn(" + shape_name + ") * 0.1 + 1.0"
                                         : "torch.randn(" + shape_name + ") * 0.1";
      em.init_lines.push_back("self." + a + " = nn.Parameter(" + init + ")");
      fwd("x = " + fn + "(x, self." + a + ")");
    } else {
      std::string y = em.input("y", s.extra_inputs[0], true);
      fwd("x = " + fn + "(x, " + y + ")");
    }
  } else if (r == "linear") {
    std::string i = em.initParam("in_features", std::to_string(s.in.back()));
    std::string o = em.initParam("out_features", std::to_string(s.out.back()));
    member(fn + "(" + i + ", " + o + kwargs(args) + ")");
  } else if (r == "matmul") {
    std::string w = em.input("w", s.extra_inputs[0], s.in.size() == 3);
    fwd("x = " + fn + "(x, " + w + ")");
  } else if (r == "attention") {
    std::string k = em.input("k", s.extra_inputs[0], true), v = em.input("v", s.extra_inputs[1], true);
    fwd("x = " + fn + "(x, " + k + ", " + v + kwargs(args) + ")");
  } else if (r == "conv") {
    std::string i = em.initParam("in_channels", std::to_string(s.in[1]));
    std::string o = em.initParam("out_channels", std::to_string(s.out[1]));
    std::string k = em.initParam("kernel_size", std::to_string(arg<int64_t>(s, "kernel_size", 3)));
    member(fn + "(" + i + ", " + o + ", " + k + kwargs(args, {"kernel_size"}) + ")");
  } else if (r == "pool" || r == "adaptive_pool") {
    if (module) {
      std::string k = kwargs(args);
      member(fn + "(" + (k.empty() ? "" : k.substr(2)) + ")");
    } else {
      fwd("x = " + fn + "(x" + kwargs(args) + ")");
    }
  } else if (r == "channel_norm") {
    std::string n = em.initParam("num_features", std::to_string(s.in[1]));
    member(fn + "(" + n + kwargs(args) + ")");
  } else if (r == "group_norm") {
    std::string g = em.initParam("num_groups", std::to_string(arg<int64_t>(s, "num_groups", 1)));
    std::string c = em.initParam("num_channels", std::to_string(s.in[1]));
    member(fn + "(" + g + ", " + c + ")");
  } else if (r == "last_norm") {
    std::string n = em.initParam("normalized_shape", std::to_string(s.in.back()));
    member(fn + "(" + n + ")");
  } else if (r == "upsample") {
    std::string mode = arg<std::string>(s, "mode", "nearest");
    size_t rank = s.in.size();
    if (mode == "linear") mode = rank == 3 ? "linear" : rank == 4 ? "bilinear" : "trilinear";
    std::string k = "scale_factor=2.0, mode=\"" + mode + "\"" + (mode == "nearest" ? "" : ", align_corners=False");
    if (module) member(fn + "(" + k + ")");
    else fwd("x = " + fn + "(x, " + k + ")");
  } else if (r == "pixel_shuffle") {
    std::string f = em.initParam("upscale_factor", std::to_string(arg<int64_t>(s, "upscale_factor", 2)));
    member(fn + "(" + f + ")");
  } else if (r == "pad") {
    Shape pads(2 * (s.in.size() - 2), arg<int64_t>(s, "pad", 1));
    fwd("x = " + fn + "(x, " + shapeText(pads) + ", value=" + pyLiteral(args.value("value", 0.0)) + ")");
  } else if (r == "glu") {
    if (module) member(fn + "(dim=-1)");
    else fwd("x = " + fn + "(x, dim=-1)");
  } else if (r == "dim") {
    std::string d = std::to_string(s.params["dim"].get<int>());
    if (module) member(fn + "(dim=" + d + ")");
    else fwd("x = " + fn + "(x, dim=" + d + ")");
  } else if (r == "reduce") {
    std::string d = std::to_string(s.params["dim"].get<int>());
    fwd("x = " + fn + "(x, dim=" + d + kwargs(args) + ")");
  } else if (r == "flatten") {
    if (module) member(fn + "()");
    else fwd("x = " + fn + "(x, 1)");
  } else if (r == "transpose") {
    fwd("x = " + fn + "(x, " + std::to_string(s.params["dim0"].get<int>()) + ", " +
        std::to_string(s.params["dim1"].get<int>()) + ")");
  } else if (r == "loss") {
    std::string t = em.input("target", s.extra_inputs[0], true);
    if (module) member(fn + "()", ", " + t);
    else fwd("x = " + fn + "(x, " + t + ")");
  } else if (r == "pairwise") {
    std::string y = em.input("y", s.extra_inputs[0], true);
    fwd("x = " + fn + "(x, " + y + ", dim=" + std::to_string(s.params["dim"].get<int>()) + ")");
  }
}

}  // namespace kb::synth
