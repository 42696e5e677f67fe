#include <torch/extension.h>  // expect: [include] [parser-limit]
#include <kb/solution.h>

KB_FORWARD(ctx) {}
