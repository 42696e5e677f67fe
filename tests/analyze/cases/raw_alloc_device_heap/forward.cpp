#include <kb/solution.h>

KB_FORWARD(ctx) { (void)ctx; }
