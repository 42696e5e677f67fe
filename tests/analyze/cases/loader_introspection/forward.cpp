// dynamic-loading, the loader-introspection half: finding a library's
// functions by walking the dynamic loader's own lists instead of dlsym.
#include <elf.h>  // expect: [include]
#include <link.h>  // expect: [include]
#include <sys/auxv.h>  // expect: [include]

#include <kb/solution.h>

// The same symbol under another name, through an asm label.
extern "C" char loader_state[] __asm__("_r_debug");  // expect: [dynamic-loading] [extern-symbol] [interpose]

static int count(struct dl_phdr_info* info, size_t, void* n) {  // expect: [dynamic-loading]
  ++*static_cast<int*>(n);
  return 0;
}

KB_FORWARD(ctx) {
  for (link_map* m = _r_debug.r_map; m; m = m->l_next)  // expect: [dynamic-loading]
    (void)m;
  auto* head = _r_debug.r_map;  // expect: [dynamic-loading]
  const char* first = head->l_name;  // expect: [dynamic-loading]
  int n = 0;
  dl_iterate_phdr(count, &n);  // expect: [dynamic-loading]
  unsigned long phdr = getauxval(AT_PHDR);  // expect: [dynamic-loading]
  const ElfW(Dyn)* dyn = _DYNAMIC;  // expect: [dynamic-loading]
  const char* maps = "/proc/self/maps";  // expect: [dynamic-loading]
  (void)first;
  (void)phdr;
  (void)dyn;
  (void)maps;
  (void)loader_state;  // expect: [dynamic-loading]
}
