#include "rl/optimizer.h"

#include <cmath>

#include "core/error.h"

namespace kb::rl {

AdamW::AdamW(std::vector<at::Tensor> params, const AdamWOptions& options) : params_(std::move(params)), o_(options) {
  at::NoGradGuard no_grad;
  for (const at::Tensor& p : params_) {
    at::Tensor master = p.scalar_type() == at::kFloat || p.scalar_type() == at::kDouble
                            ? at::Tensor()
                            : p.detach().to(at::kFloat).clone();
    master_.push_back(master);
    m_.push_back(at::zeros_like(p, p.options().dtype(at::kFloat)));
    v_.push_back(at::zeros_like(p, p.options().dtype(at::kFloat)));
  }
}

double AdamW::learningRate(int64_t t) const {
  if (o_.warmup_steps <= 0) return o_.lr;
  return o_.lr * std::min(1.0, static_cast<double>(t) / static_cast<double>(o_.warmup_steps));
}

double AdamW::step(const std::vector<at::Tensor>& grads) {
  at::NoGradGuard no_grad;
  ++t_;
  const double lr = learningRate(t_);
  const double bc1 = 1.0 - std::pow(o_.beta1, static_cast<double>(t_));
  const double bc2 = 1.0 - std::pow(o_.beta2, static_cast<double>(t_));
  for (size_t i = 0; i < params_.size(); ++i) {
    at::Tensor& p = params_[i];
    const at::Tensor g = grads.at(i).to(at::kFloat);
    at::Tensor w = master_[i].defined() ? master_[i] : p.detach();
    m_[i].mul_(o_.beta1).add_(g, 1.0 - o_.beta1);
    v_[i].mul_(o_.beta2).addcmul_(g, g, 1.0 - o_.beta2);
    if (o_.weight_decay > 0) w.mul_(1.0 - lr * o_.weight_decay);
    const at::Tensor denom = (v_[i] / bc2).sqrt_().add_(o_.eps);
    w.addcdiv_(m_[i], denom, -lr / bc1);
    if (master_[i].defined()) p.detach().copy_(w);
  }
  return lr;
}

std::vector<std::pair<std::string, at::Tensor>> AdamW::state() const {
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (size_t i = 0; i < params_.size(); ++i) {
    const std::string k = std::to_string(i);
    out.emplace_back("m." + k, m_[i].detach().to(at::kCPU).contiguous());
    out.emplace_back("v." + k, v_[i].detach().to(at::kCPU).contiguous());
    if (master_[i].defined()) out.emplace_back("master." + k, master_[i].detach().to(at::kCPU).contiguous());
  }
  out.emplace_back("step", at::tensor(std::vector<int64_t>{t_}, at::kLong));
  return out;
}

void AdamW::loadState(const std::map<std::string, at::Tensor>& state) {
  at::NoGradGuard no_grad;
  auto get = [&](const std::string& name, const at::Tensor& like) {
    auto it = state.find(name);
    if (it == state.end()) throw UsageError("optimizer state without " + name);
    if (it->second.sizes() != like.sizes())
      throw UsageError("optimizer state " + name + " does not fit its parameter (shape differs)");
    return it->second;
  };
  for (size_t i = 0; i < params_.size(); ++i) {
    const std::string k = std::to_string(i);
    m_[i].copy_(get("m." + k, m_[i]));
    v_[i].copy_(get("v." + k, v_[i]));
    if (master_[i].defined()) master_[i].copy_(get("master." + k, master_[i]));
  }
  if (state.count("m." + std::to_string(params_.size())))
    throw UsageError("optimizer state has more parameters than the model");
  auto it = state.find("step");
  if (it == state.end() || it->second.numel() != 1) throw UsageError("optimizer state without its step count");
  t_ = it->second.to(at::kLong).item<int64_t>();
}

}  // namespace kb::rl
