// Run-time linking with nvJitLink (a review by attack, 2026-12-07): its
// output would be code no rule saw.
#include <nvJitLink.h>  // expect: [include]

#include <kb/solution.h>

KB_FORWARD(ctx) {
  nvJitLinkHandle h;
  nvJitLinkCreate(&h, 0, nullptr);  // expect: [library-api]
}
