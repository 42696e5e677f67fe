// const that stops at a pointer (issue 35, class 7): a global or static
// whose own bytes are const but which points at a buffer it set up at run
// time, and writes that buffer on every call.
#include <cstdlib>
#include <map>
#include <memory>
#include <vector>

#include <kb/solution.h>

namespace {
struct Holder {
  float* data;
};
struct Deep {
  Holder inner;
};
struct Reader {
  const float* data;
};
}  // namespace

const std::unique_ptr<float[]> g_buffer(new float[1024]);  // expect: [interpose] [mutable-global]
static float* const g_raw = static_cast<float*>(std::malloc(4096));  // expect: [interpose] [mutable-global]
const std::shared_ptr<int> g_shared = std::make_shared<int>(0);  // expect: [interpose] [mutable-global]
const std::vector<float*> g_pointers(4, g_raw);  // expect: [interpose] [mutable-global]
const std::map<int, std::unique_ptr<float>> g_map = {};  // expect: [interpose] [mutable-global]
const Deep g_deep{{g_raw}};  // expect: [interpose] [mutable-global]

// Const all the way down, or set up as a constant: no pointer to mutable
// data (interpose still reports the run-time initialisation of the first
// three). But a const object of a class with a non-trivial destructor
// (a vector, a unique_ptr) is not put in read-only memory, so a cast that
// takes const away rewrites it: mutable-global.
const std::vector<float> g_values(4, 1.f);  // expect: [interpose] [mutable-global]
const std::unique_ptr<const float[]> g_const_buffer(new float[4]());  // expect: [interpose] [mutable-global]
const Reader g_reader{g_raw};  // expect: [interpose]
static float* const g_null = nullptr;
static const char* const g_name = "ok";
const std::unique_ptr<float[]> g_empty;  // expect: [mutable-global]

KB_FORWARD(ctx) {
  const float* in = ctx.input(0).data_as<float>();
  static const std::unique_ptr<float[]> cache(new float[16]);  // expect: [mutable-global]
  static float* const scratch = new float[16];  // expect: [mutable-global]
  cache[0] = in[0];
  scratch[0] = in[0];
  g_buffer[0] = in[0];
  g_raw[0] = in[0];
  *g_shared = 1;
  g_pointers[0][0] = in[0];
  g_deep.inner.data[0] = in[0];
  (void)g_map;
  (void)g_values;
  (void)g_const_buffer;
  (void)g_reader;
  (void)g_null;
  (void)g_name;
  (void)g_empty;
}
