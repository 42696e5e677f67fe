// State kept by library calls rather than by naming a global (a review by
// attack, 2026-12-07): the default memory resource, the global locale and
// its facets, the C random generators' seeds and states (and rand's hidden
// sequence, which counts calls), strtok's saved position, stream buffers.
// Each can hold a value from one call for the next.
#include <clocale>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <locale>
#include <memory_resource>

#include <kb/solution.h>

KB_FORWARD(ctx) {
  const float* in = ctx.input(0).data_as<float>();
  std::pmr::set_default_resource(std::pmr::null_memory_resource());  // expect: [mutable-global]
  std::locale::global(std::locale());  // expect: [mutable-global]
  setlocale(LC_ALL, "C");  // expect: [mutable-global]
  unsigned short seed[3] = {1, 2, 3};
  seed48(seed);  // expect: [mutable-global]
  srand48(static_cast<long>(in[0]));  // expect: [mutable-global]
  srand(7);  // expect: [mutable-global]
  int r = rand();  // expect: [mutable-global]
  char buf[16] = "a,b";
  char* tok = strtok(buf, ",");  // expect: [mutable-global]
  static char iobuf[BUFSIZ];  // expect: [mutable-global]
  setvbuf(stdout, iobuf, _IOFBF, sizeof iobuf);  // expect: [mutable-global]
  (void)r;
  (void)tok;
}
