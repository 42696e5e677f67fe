#include "rl/train_checkpoint.h"

#include <map>

#include "core/error.h"
#include "llm/model.h"

namespace fs = std::filesystem;

namespace kb::rl {

namespace {

// The options that fix the data, its order and its split over processes: a
// resumed run must have the same ones (max_steps may grow; lr and the like
// may change, at the user's risk).
Json resumeKey(const TrainOptions& o, const std::string& stage, int world_size) {
  Json files = Json::array();
  for (const auto& f : o.trajectories) files.push_back(fs::absolute(f).lexically_normal().string());
  return {{"stage", stage},
          {"trajectories", files},
          {"model", fs::absolute(o.model).lexically_normal().string()},
          {"batch_size", o.batch_size},
          {"epochs", o.epochs},
          {"seed", o.seed},
          {"shuffle", o.shuffle},
          {"shards", o.shards},
          {"max_length", o.max_length},
          {"use_recorded_tokens", o.use_recorded_tokens},
          {"world_size", world_size}};
}

std::string tablesFile(int rank) { return "tables-rank" + std::to_string(rank) + ".safetensors"; }

}  // namespace

fs::path checkpointDir(const TrainOptions& o) { return o.out / "checkpoint"; }

ResumePoint openResume(const TrainOptions& o, const std::string& stage, int world_size) {
  ResumePoint r;
  const fs::path dir = checkpointDir(o);
  if (!o.resume) {
    if (fs::exists(dir / "state.json"))
      throw UsageError(o.out.string() + " holds the checkpoint of an unfinished run (" + dir.string() +
                       "): add --resume to continue it, or remove that directory to start again");
    return r;
  }
  if (!fs::exists(dir / "state.json"))
    throw UsageError("--resume: no checkpoint in " + dir.string() +
                     " (one is written by --checkpoint-every N and when a run is stopped by SIGINT/SIGTERM)");
  Json st;
  try {
    st = readJsonFile(dir / "state.json");
  } catch (const Error& e) {
    throw UsageError(std::string("--resume: ") + e.what());
  }
  if (!st.is_object() || !st.contains("key") || !st["key"].is_object() || !st.contains("step") ||
      !st["step"].is_number_unsigned())
    throw UsageError("--resume: " + (dir / "state.json").string() + " is not a kbtrain checkpoint state");
  const Json key = resumeKey(o, stage, world_size);
  for (const auto& [k, v] : key.items()) {
    const Json had = st["key"].value(k, Json());
    if (had != v)
      throw UsageError("--resume: the checkpoint in " + dir.string() + " was written with " + k + " = " + had.dump() +
                       ", this run has " + v.dump() + "; resume with the options of the stopped run");
  }
  r.active = true;
  r.step = st["step"].get<size_t>();
  r.dir = dir;
  r.state = st;
  return r;
}

void writeCheckpoint(const TrainOptions& o, Distributed& d, const std::string& stage, size_t completed,
                     size_t steps, const Json& last, const Json& scalars, const NamedTables& tables,
                     const std::vector<std::pair<std::string, const AdamW*>>& optimizers,
                     const std::function<void(const fs::path&)>& write_models) {
  const fs::path final_dir = checkpointDir(o);
  const fs::path tmp = final_dir.string() + ".tmp", old = final_dir.string() + ".old";
  if (d.rank() == 0) {
    fs::remove_all(tmp);
    fs::create_directories(tmp);
  }
  d.barrier();
  if (!tables.empty()) {
    // Each table flattened: <name>.values (float32, every sequence in order)
    // and <name>.lengths (int64, one per sequence of every episode).
    std::vector<std::pair<std::string, at::Tensor>> t;
    for (const auto& [name, table] : tables) {
      std::vector<float> values;
      std::vector<int64_t> lengths;
      for (const auto& ep : *table)
        for (const auto& seq : ep) {
          lengths.push_back(static_cast<int64_t>(seq.size()));
          values.insert(values.end(), seq.begin(), seq.end());
        }
      if (!values.empty()) t.emplace_back(name + ".values", at::tensor(values, at::kFloat));
      if (!lengths.empty()) t.emplace_back(name + ".lengths", at::tensor(lengths, at::kLong));
    }
    if (!t.empty()) llm::writeTensors(tmp / tablesFile(d.rank()), t);
  }
  d.barrier();
  if (d.rank() == 0) {
    write_models(tmp);
    for (const auto& [name, optimizer] : optimizers)
      llm::writeTensors(tmp / (name + ".safetensors"), optimizer->state());
    const Json state = {{"stage", stage},   {"step", completed}, {"steps", steps},
                        {"key", resumeKey(o, stage, d.worldSize())},
                        {"last", last},     {"scalars", scalars}};
    writeJsonFile(tmp / "state.json", state);
    fs::remove_all(old);
    if (fs::exists(final_dir)) fs::rename(final_dir, old);
    fs::rename(tmp, final_dir);
    fs::remove_all(old);
  }
  d.barrier();
}

void loadOptimizer(AdamW& optimizer, const fs::path& file) {
  if (!fs::exists(file)) throw UsageError("--resume: the checkpoint has no " + file.string());
  std::map<std::string, at::Tensor> state;
  for (auto& [name, t] : llm::readTensors(file)) state[name] = t;
  try {
    optimizer.loadState(state);
  } catch (const UsageError& e) {
    throw UsageError("--resume: " + file.string() + ": " + e.what());
  }
}

void loadTables(const fs::path& dir, int rank, const Dataset& d, const NamedTables& tables) {
  if (tables.empty()) return;
  const fs::path file = dir / tablesFile(rank);
  std::map<std::string, at::Tensor> t;
  if (fs::exists(file))
    for (auto& [name, x] : llm::readTensors(file)) t[name] = x;
  for (const auto& [name, table] : tables) {
    *table = emptyTable(d);
    const bool has_lengths = t.count(name + ".lengths") > 0;
    if (!has_lengths) {
      size_t seqs = 0;
      for (const Episode& e : d.episodes) seqs += e.sequences.size();
      if (seqs == 0) continue;
      throw UsageError("--resume: " + file.string() + " has no table " + name);
    }
    const at::Tensor lengths = t[name + ".lengths"].to(at::kLong).contiguous();
    const at::Tensor values =
        t.count(name + ".values") ? t[name + ".values"].to(at::kFloat).contiguous() : at::zeros({0}, at::kFloat);
    const int64_t* len = lengths.data_ptr<int64_t>();
    const float* val = values.data_ptr<float>();
    int64_t k = 0, pos = 0;
    for (size_t e = 0; e < d.episodes.size(); ++e)
      for (size_t s = 0; s < d.episodes[e].sequences.size(); ++s) {
        if (k >= lengths.numel()) throw UsageError("--resume: table " + name + " in " + file.string() + " is short");
        const int64_t n = len[k++];
        if (n < 0 || pos + n > values.numel())
          throw UsageError("--resume: table " + name + " in " + file.string() + " is corrupt");
        (*table)[e][s].assign(val + pos, val + pos + n);
        pos += n;
      }
    if (k != lengths.numel() || pos != values.numel())
      throw UsageError("--resume: table " + name + " in " + file.string() +
                       " does not fit the trajectories (were they changed?)");
  }
}

bool stopAgreed(const TrainOptions& o, Distributed& d, const at::Device& device) {
  const double local = o.stop_requested && o.stop_requested() ? 1.0 : 0.0;
  if (!d.active()) return local > 0;
  std::vector<at::Tensor> t{at::tensor(std::vector<double>{local}, at::kDouble).to(device)};
  d.allReduceMax(t);
  return t[0].to(at::kCPU).item<double>() > 0;
}

void removeCheckpoint(const TrainOptions& o, const Distributed& d) {
  if (d.rank() != 0) return;
  std::error_code ec;
  fs::remove_all(checkpointDir(o), ec);
  fs::remove_all(checkpointDir(o).string() + ".tmp", ec);
}

void addCheckpointFields(Json& summary, const TrainOptions& o, const ResumePoint& resume, bool stopped,
                         size_t completed) {
  summary["stopped"] = stopped;
  if (stopped) {
    summary["checkpoint"] = fs::exists(checkpointDir(o) / "state.json") ? Json(checkpointDir(o).string()) : Json();
    summary["completed_steps"] = completed;
  }
  if (resume.active) summary["resumed_from_step"] = resume.step;
}

void checkResumeFits(const ResumePoint& resume, size_t steps) {
  if (resume.step > steps)
    throw UsageError("--resume: the checkpoint is at step " + std::to_string(resume.step) + " of a run of " +
                     std::to_string(steps) + " steps");
}

}  // namespace kb::rl
