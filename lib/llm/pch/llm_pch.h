// Precompiled for lib/llm's LibTorch sources: ATen's headers dominate
// their build time.
#include <ATen/ATen.h>
