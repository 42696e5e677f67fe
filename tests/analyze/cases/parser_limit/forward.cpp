// parser-limit: a parse error is a note, and never a hiding place. Clang
// drops the declarations below (a deliberate syntax error stands in for a
// construct only nvcc accepts), so the AST rules never see their bodies; the
// token scan of the rejected declarations still finds what they name.
#include <kb/solution.h>

extern "C" void* dlsym(void* handle, const char* name) noexcept;  // expect: [extern-symbol]
#define LOOKUP(name) dlsym(nullptr, name)

static void hidden( {  // expect: [parser-limit]
  void* relu = LOOKUP("_ZN2at4_ops5relu_4callERNS_6TensorE");  // expect: [dynamic-loading] [parser-limit]
  torch::relu_(relu);  // expect: [torch-api]
  asm volatile("syscall");  // expect: [raw-syscall]
}

// Clang's recovery swallows this too: a note at its end.
KB_FORWARD(ctx) {
  int fine = 1;
  (void)fine;
}  // expect: [parser-limit]
