// Code run at load time without a constructor attribute or a dynamic
// initialiser: a constant function pointer placed in a section whose
// entries the loader calls (issue 35, class 6-static). Any section
// attribute is a finding; the load-time ones say so.
#include <kb/solution.h>

namespace {
void at_load() {}
void at_unload() {}
}  // namespace

__attribute__((section(".init_array"))) static void (*const g_init)() = at_load;  // expect: [interpose]
__attribute__((section(".init_array.00101"), used)) void (*const g_init_ordered)() = at_load;  // expect: [interpose]
[[gnu::section(".preinit_array")]] static void (*const g_preinit)() = at_load;  // expect: [interpose]
[[gnu::section(".fini_array")]] static void (*const g_fini)() = at_unload;  // expect: [interpose]
__attribute__((section(".ctors"))) static void (*const g_ctor)() = at_load;  // expect: [interpose]
__attribute__((section(".data.kb"))) static const int g_placed = 1;  // expect: [interpose]
__attribute__((section(".text.kb"))) void placed_code() {}  // expect: [interpose]
__attribute__((destructor)) static void at_exit_too() {}  // expect: [interpose]

asm(".pushsection .init_array,\"aw\"\n.quad 0\n.popsection");  // expect: [interpose] [raw-syscall]

extern "C" void* resolve_fast() { return nullptr; }
extern "C" void fast() __attribute__((ifunc("resolve_fast")));  // expect: [interpose]

void host_side() {
  asm volatile(".section .ctors\n.quad 0\n.previous");  // expect: [interpose] [raw-syscall]
}

KB_FORWARD(ctx) {
  (void)g_init;
  (void)g_init_ordered;
  (void)g_preinit;
  (void)g_fini;
  (void)g_ctor;
  (void)g_placed;
}
