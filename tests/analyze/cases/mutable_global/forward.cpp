#include <cstdint>

#include <kb/solution.h>

static float* g_cached_output = nullptr;  // expect: [mutable-global]
int g_calls;  // expect: [mutable-global]
thread_local int t_state;  // expect: [mutable-global]
static const int kConst = 4;  // fine
constexpr float kTable[2] = {1.f, 2.f};  // fine
static const char* const kName = "ok";  // fine
static const char* g_mutable_pointer = "x";  // expect: [mutable-global]

struct Cache {
  static std::uintptr_t last_input;  // declaration only
};
std::uintptr_t Cache::last_input = 0;  // expect: [mutable-global]

struct Memo {
  mutable const void* last = nullptr;
};
const Memo g_memo;  // expect: [mutable-global]

KB_FORWARD(ctx) {
  static bool initialised = false;  // expect: [mutable-global]
  static const float first_seen = ctx.input(0).data_as<float>()[0];  // expect: [mutable-global]
  (void)first_seen;
  (void)g_memo;
  initialised = true;
  g_calls += kConst + static_cast<int>(kTable[0]);
  (void)g_cached_output;
  (void)g_mutable_pointer;
  (void)kName;
  (void)t_state;
}
