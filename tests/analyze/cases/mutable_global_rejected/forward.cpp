// A parse error rejects the initialiser, not the variable (a review by
// attack, 2026-12-07): g++ knows __builtin_has_attribute, Clang does not, so
// each line below was a parser-limit note and the counter beside it was
// dropped with the whole rejected declaration. Now only a declaration Clang
// rejected on its own line is left out, and a variable whose declarator
// parsed up to its initialiser is judged as the mutable global it is.
#include <kb/solution.h>

static int g_calls = __builtin_has_attribute(int, aligned) ? 0 : 0;  // expect: [mutable-global] [parser-limit]
static auto g_more = __builtin_has_attribute(int, aligned) ? 0 : 0;  // expect: [mutable-global] [parser-limit]
static int g_split =  // expect: [mutable-global]
    __builtin_has_attribute(int, aligned) ? 0 : 0;  // expect: [parser-limit]

KB_FORWARD(ctx) {
  static int calls = 0;  // expect: [mutable-global]
  if (++calls + g_calls + g_more + g_split > 3) ctx.fail("x");
  // GCC's __builtin_apply_args: the caller's argument registers.
  void* regs = __builtin_apply_args();  // expect: [dynamic-loading] [parser-limit]
  bool aligned_ok = __builtin_has_attribute(int, aligned);  // expect: [parser-limit]
  (void)regs, (void)aligned_ok;
}
