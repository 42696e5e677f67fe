// Attack (issue 35, class 1: the harness's memory is the candidate's):
// kb_context used to be the address of the harness's per-call object, which
// led to the timing session. This solution defines kb_forward by hand and
// calls the API with a context of its own making (the token it was handed,
// moved by a few bytes, as a walk from it would). The harness hands out a
// random token per call, never an address, and a token that is not the
// call's own is a protocol deviation: must end hack_detected (not a crash,
// not a runtime error).
#include <kb/solution.h>

#include <cstdint>

extern "C" int32_t kb_forward(const kb_api* api, kb_context* ctx) {
  kb_value v;
  kb_context* forged = reinterpret_cast<kb_context*>(reinterpret_cast<uintptr_t>(ctx) + 8);
  if (api->input(forged, 0, &v) != 0) return 1;
  return 1;
}
