// Precompiled for lib/rl's LibTorch sources: ATen's headers dominate their
// build time.
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
