// An asm label written in the solution binds a name an allowed header
// declares to another symbol (a review by attack, 2026-12-07): g++ calls
// system for `puts` below, and every rule that judges names saw only puts.
// `#pragma redefine_extname` does the same to the header's own
// declaration. The label is judged as the symbol it names (process,
// raw-syscall), and a symbol the solution does not define is extern-symbol's.
#pragma redefine_extname labs syscall  // expect: [extern-symbol]
#pragma redefine_extname ungetc __libc_system  // expect: [extern-symbol]
// Refused where it is written: the header's own inline atof calls strtod,
// so g++ calls system("id") below with no reference to strtod in the
// solution.
#pragma redefine_extname strtod system  // expect: [extern-symbol]
#include <cstdio>
#include <cstdlib>

#include <kb/solution.h>

extern "C" int puts(const char*) __asm__("system");  // expect: [extern-symbol]

// g++ knows library built-ins Clang does not (__builtin_fork, execve,
// _exit): Clang rejects the declaration, g++ calls fork. The token scan
// judges the name after the prefix.
static void spawn() {
  if (__builtin_fork() == 0) __builtin__exit(0);  // expect: [parser-limit] [process]
}

KB_FORWARD(ctx) {
  puts("id");  // expect: [process]
  long pid = labs(39);  // expect: [raw-syscall]
  int r = ungetc('x', nullptr);  // a symbol no list names: extern-symbol alone
  double d = std::atof("id");
  (void)d;
  (void)pid, (void)r;
  spawn();
  std::printf("%d\n", 1);  // fine: printf is printf
}
