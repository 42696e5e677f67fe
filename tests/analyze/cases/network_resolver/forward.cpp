// The DNS resolver (<resolv.h>, in /usr/include itself, so the include rule
// lets it through): res_query sends a query, and _res is per-thread state
// (a review by attack, 2026-12-07).
#include <resolv.h>

#include <kb/solution.h>

KB_FORWARD(ctx) {
  unsigned char answer[512];
  res_init();  // expect: [network]
  res_query("x.example", 1, 1, answer, sizeof answer);  // expect: [network]
  _res.retry = 7;  // expect: [network]
}
