#include "rl/gradients.h"

#include <cmath>

#include "core/error.h"

namespace kb::rl {

Gradients::Gradients(const std::vector<at::Tensor>& params, at::ScalarType dtype) : params_(params) {
  for (const at::Tensor& p : params_) buffers_.push_back(at::zeros(p.sizes(), p.options().dtype(dtype)));
}

void Gradients::accumulate() {
  at::NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    at::Tensor& p = params_[i];
    if (!p.grad().defined()) continue;
    buffers_[i].add_(p.grad().to(buffers_[i].scalar_type()));
    p.mutable_grad() = at::Tensor();
  }
}

double Gradients::clipNorm(double max_norm) {
  at::NoGradGuard no_grad;
  if (buffers_.empty()) return 0.0;
  std::vector<at::Tensor> sq;
  for (const at::Tensor& b : buffers_) sq.push_back(b.to(at::kDouble).pow(2).sum());
  const double norm = std::sqrt(at::stack(sq).sum().item<double>());
  if (max_norm > 0 && norm > max_norm) {
    const double scale = max_norm / (norm + 1e-6);
    for (at::Tensor& b : buffers_) b.mul_(scale);
  }
  return norm;
}

void Gradients::zero() {
  for (at::Tensor& b : buffers_) b.zero_();
}

at::ScalarType gradientDtype(const std::string& name, at::ScalarType model) {
  if (name == "float64") return at::kDouble;
  if (name == "float32") return at::kFloat;
  if (name != "auto") throw UsageError("--grad-dtype must be auto, float32 or float64");
  return model == at::kFloat || model == at::kDouble ? at::kDouble : at::kFloat;
}

}  // namespace kb::rl
