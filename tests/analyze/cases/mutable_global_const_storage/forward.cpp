// Const storage that is writable, and library state kept by a write or a
// setter (a review by attack, 2026-12-07): each carried a counter or a
// pointer from call to call. A cast that takes const away from a const
// global, a const object whose class has a non-trivial destructor (not put
// in read-only memory: a pun through a union or memcpy rewrites it with no
// cast), a const thread_local, errno written with a value, a standard
// stream's format state.
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <sstream>

#include <kb/solution.h>

namespace {
int make() { return 0; }
struct Box {
  int v[16];
  ~Box() {}
};
const int g_calls = make();  // expect: [interpose]
const int g_table[4] = {make(), 0, 0, 0};  // expect: [interpose]
static const int g_zero = 0;
const Box g_box = {};  // expect: [mutable-global]
thread_local const long g_slot = 0;  // expect: [mutable-global]

// Fine: constexpr, const all the way down in read-only memory, and reads.
constexpr float kScale[2] = {1.f, 2.f};
static const float kTable[4] = {1.f, 2.f, 3.f, 4.f};
void take(const float* p) { (void)p; }
}  // namespace

KB_FORWARD(ctx) {
  ++const_cast<int&>(g_calls);  // expect: [mutable-global]
  int* p = (int*)g_table;  // expect: [mutable-global]
  p[0]++;
  int* q = reinterpret_cast<int*>(reinterpret_cast<std::uintptr_t>(&g_zero));  // expect: [mutable-global]
  (void)q;
  std::memcpy((void*)&g_box.v[1], &g_calls, 4);  // expect: [mutable-global]
  static const Box s_box = {};  // expect: [mutable-global]
  (void)s_box;

  int calls = errno;
  errno = calls + 1;  // expect: [mutable-global]
  errno = 0;

  std::streamsize n = std::cout.precision();
  std::cout.precision(n + 1);  // expect: [mutable-global]
  (std::cerr << "x").width(n);  // expect: [mutable-global]
  std::cout << "x" << std::setprecision(static_cast<int>(n));  // expect: [mutable-global]
  std::ios_base::sync_with_stdio(n > 3);  // expect: [mutable-global]

  // Fine: a local stream's state, constant manipulators, reads.
  std::ostringstream os;
  os << std::setw(static_cast<int>(n)) << 3;
  os.precision(n);
  std::cout << std::setprecision(3) << std::fixed << kScale[0] << '\n';
  take(kTable);
  const float* r = (const float*)kTable;
  (void)r;
}
