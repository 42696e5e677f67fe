// program_invocation_name points into argv on the stack, and the
// environment strings follow argv: walking on from it reads the
// environment (and the stack) with no getenv or environ (a review by
// attack, 2026-12-07).
#include <cerrno>
#include <cstring>

#include <kb/solution.h>

KB_FORWARD(ctx) {
  const char* p = program_invocation_name;  // expect: [environment]
  for (int i = 0; i < 8; ++i) p += std::strlen(p) + 1;
  const char* s = program_invocation_short_name;  // expect: [environment]
  if (p[0] == 'X' || s[0] == 'X') ctx.fail(p);
}
