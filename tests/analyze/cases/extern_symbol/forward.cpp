// A libtorch C entry point declared by hand: the linker would find it.
#include <kb/solution.h>

#include "kernels/helper.cuh"

extern "C" int THPVariable_Check(void* obj);  // expect: [extern-symbol]
extern "C" int never_used_declaration(int);
extern int some_library_global;  // expect: [extern-symbol]

KB_FORWARD(ctx) {
  if (THPVariable_Check(nullptr) + some_library_global) ctx.fail("no");
  helper_defined_in_kernels(1.0f);  // declared in a header, defined in kernels/helper.cu: fine
}
