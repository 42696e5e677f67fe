/* kb/solution.h -- the one header a solution includes.
 *
 * A solution never sees torch. The trusted harness owns every tensor and
 * hands the solution plain views: a data pointer, sizes, strides (in
 * elements), a dtype and a device. Inputs come in the order get_inputs()
 * returns them; the reference module's parameters and buffers come by their
 * state_dict names; outputs and scratch memory are allocated through the
 * harness (which backs them with PyTorch's caching allocator on CUDA); work is
 * launched on the stream the harness gives.
 *
 * The same interface works on CPU tensors (device KB_CPU), so the harness is
 * tested end to end on machines without a GPU.
 *
 * Entry points a solution defines, in forward.cpp:
 *
 *   KB_FORWARD(ctx) { ... }   required: compute the outputs of one forward.
 *   KB_INIT(ctx) { ... }      optional, untimed: prepare weights (fold,
 *                             transpose, pack) into named state buffers. It
 *                             sees parameters, never inputs.
 *
 * The C ABI below (kb_api, kb_forward, kb_init) is the contract with the
 * harness; the C++ wrappers in namespace kb are conveniences over it. See
 * docs/solution-format.md.
 */
#ifndef KB_SOLUTION_H
#define KB_SOLUTION_H

#include <stddef.h>
#include <stdint.h>

#define KB_ABI_VERSION 1
#define KB_MAX_DIMS 8

#ifdef __cplusplus
extern "C" {
#endif

/* Element types, numbered as the harness maps them from torch dtypes. */
typedef enum kb_dtype {
  KB_FLOAT32 = 0,
  KB_FLOAT16 = 1,
  KB_BFLOAT16 = 2,
  KB_FLOAT64 = 3,
  KB_INT8 = 4,
  KB_UINT8 = 5,
  KB_INT16 = 6,
  KB_INT32 = 7,
  KB_INT64 = 8,
  KB_BOOL = 9
} kb_dtype;

typedef enum kb_device_type { KB_CPU = 0, KB_CUDA = 1 } kb_device_type;

/* A view of memory the harness owns. Strides are in elements. */
typedef struct kb_tensor {
  void* data;
  int64_t sizes[KB_MAX_DIMS];
  int64_t strides[KB_MAX_DIMS];
  int32_t ndim;
  int32_t dtype;        /* kb_dtype */
  int32_t device;       /* kb_device_type */
  int32_t device_index; /* CUDA ordinal; 0 on CPU */
} kb_tensor;

typedef enum kb_value_kind {
  KB_VALUE_NONE = 0,
  KB_VALUE_TENSOR = 1,
  KB_VALUE_INT = 2,
  KB_VALUE_FLOAT = 3,
  KB_VALUE_BOOL = 4
} kb_value_kind;

/* One input: a tensor or a scalar, as get_inputs() produced it. */
typedef struct kb_value {
  int32_t kind; /* kb_value_kind */
  kb_tensor tensor;
  int64_t i; /* KB_VALUE_INT and KB_VALUE_BOOL */
  double f;  /* KB_VALUE_FLOAT */
} kb_value;

/* Opaque: owned by the harness, valid for one call. */
typedef struct kb_context kb_context;

/* Every function returns 0 on success and non-zero on failure; on failure
 * the harness has recorded why, and the solution should return non-zero. */
typedef struct kb_api {
  uint32_t abi_version; /* KB_ABI_VERSION of the harness */
  uint32_t size;        /* sizeof(kb_api) of the harness */
  int32_t device;       /* kb_device_type every tensor of this call lives on */
  int32_t reserved;

  int32_t (*num_inputs)(kb_context* ctx);
  int32_t (*input)(kb_context* ctx, int32_t index, kb_value* out);

  int32_t (*num_params)(kb_context* ctx);
  const char* (*param_name)(kb_context* ctx, int32_t index);
  int32_t (*param)(kb_context* ctx, const char* name, kb_tensor* out);

  /* Output `index` (0-based, in the order the reference returns them),
   * contiguous, allocated by the harness. Each index is allocated once. */
  int32_t (*alloc_output)(kb_context* ctx, int32_t index, int32_t ndim,
                          const int64_t* sizes, int32_t dtype, kb_tensor* out);
  /* Scratch memory for this call only, 256-byte aligned. */
  int32_t (*alloc_scratch)(kb_context* ctx, size_t bytes, void** out);

  /* Named state prepared by the init hook: create in init, read in forward. */
  int32_t (*create_state)(kb_context* ctx, const char* name, int32_t ndim,
                          const int64_t* sizes, int32_t dtype, kb_tensor* out);
  int32_t (*state)(kb_context* ctx, const char* name, kb_tensor* out);

  /* Handles owned by the harness, all bound to stream(). NULL on CPU. */
  void* (*stream)(kb_context* ctx);   /* cudaStream_t */
  void* (*cublas)(kb_context* ctx);   /* cublasHandle_t */
  void* (*cublaslt)(kb_context* ctx); /* cublasLtHandle_t */
  void* (*cudnn)(kb_context* ctx);    /* cudnnHandle_t */

  /* Record a failure with a message; the call then ends as runtime_error. */
  void (*fail)(kb_context* ctx, const char* message);
  int32_t (*failed)(kb_context* ctx);

  /* The sanctioned home of host objects made in the init hook (an
   * instantiated CUDA graph, a cuBLASLt matmul plan, a descriptor): set in
   * init only, read in forward, so that no global variable is ever needed.
   * `destroy` (may be NULL) runs when the harness ends. The harness cannot
   * see inside a host object: it must not carry results between calls (the
   * inputs of every timed call are new values, so a result kept there is
   * never the right one). Present when api->size covers it. */
  int32_t (*set_host_object)(kb_context* ctx, const char* name, void* object,
                             void (*destroy)(void* object));
  void* (*host_object)(kb_context* ctx, const char* name);
} kb_api;

typedef int32_t (*kb_forward_fn)(const kb_api* api, kb_context* ctx);
typedef int32_t (*kb_init_fn)(const kb_api* api, kb_context* ctx);

#ifdef __cplusplus
} /* extern "C" */

#include <initializer_list>

namespace kb {

/* A kb_tensor with accessors. */
struct Tensor : kb_tensor {
  int64_t size(int dim) const { return sizes[dim < 0 ? dim + ndim : dim]; }
  int64_t stride(int dim) const { return strides[dim < 0 ? dim + ndim : dim]; }
  int64_t numel() const {
    int64_t n = 1;
    for (int d = 0; d < ndim; ++d) n *= sizes[d];
    return n;
  }
  bool is_contiguous() const {
    int64_t expected = 1;
    for (int d = ndim - 1; d >= 0; --d) {
      if (sizes[d] != 1 && strides[d] != expected) return false;
      expected *= sizes[d];
    }
    return true;
  }
  template <typename T>
  T* data_as() const { return static_cast<T*>(data); }
};

/* The view a solution's forward and init get: a thin layer over kb_api. */
class Context {
 public:
  Context(const kb_api* api, kb_context* ctx) : api_(api), ctx_(ctx) {}

  bool on_cuda() const { return api_->device == KB_CUDA; }
  int num_inputs() const { return api_->num_inputs(ctx_); }

  /* Input `index` as a tensor; fails the call if it is a scalar. */
  Tensor input(int index) const {
    kb_value v = value(index);
    Tensor t{};
    if (v.kind == KB_VALUE_TENSOR) {
      static_cast<kb_tensor&>(t) = v.tensor;
    } else {
      fail("input is not a tensor");
    }
    return t;
  }
  int64_t input_int(int index) const { return value(index).i; }
  double input_float(int index) const {
    kb_value v = value(index);
    return v.kind == KB_VALUE_FLOAT ? v.f : static_cast<double>(v.i);
  }
  bool input_bool(int index) const { return value(index).i != 0; }
  kb_value value(int index) const {
    kb_value v{};
    api_->input(ctx_, index, &v);
    return v;
  }

  /* A parameter or buffer of the reference module by state_dict name. */
  Tensor param(const char* name) const {
    Tensor t{};
    api_->param(ctx_, name, &t);
    return t;
  }

  /* Contiguous output `index` of the given shape and dtype. */
  Tensor output(int index, std::initializer_list<int64_t> shape,
                kb_dtype dtype = KB_FLOAT32) const {
    return output(index, static_cast<int>(shape.size()), shape.begin(), dtype);
  }
  Tensor output(int index, int ndim, const int64_t* shape,
                kb_dtype dtype = KB_FLOAT32) const {
    Tensor t{};
    api_->alloc_output(ctx_, index, ndim, shape, dtype, &t);
    return t;
  }

  void* scratch(size_t bytes) const {
    void* p = nullptr;
    api_->alloc_scratch(ctx_, bytes, &p);
    return p;
  }

  /* Init only: a persistent buffer the forward reads back with state(). */
  Tensor create_state(const char* name, std::initializer_list<int64_t> shape,
                      kb_dtype dtype = KB_FLOAT32) const {
    Tensor t{};
    api_->create_state(ctx_, name, static_cast<int32_t>(shape.size()),
                       shape.begin(), dtype, &t);
    return t;
  }
  Tensor state(const char* name) const {
    Tensor t{};
    api_->state(ctx_, name, &t);
    return t;
  }

  void* stream() const { return api_->stream(ctx_); }
  void* cublas() const { return api_->cublas(ctx_); }
  void* cublaslt() const { return api_->cublaslt(ctx_); }
  void* cudnn() const { return api_->cudnn(ctx_); }

  void fail(const char* message) const { api_->fail(ctx_, message); }
  bool failed() const { return api_->failed(ctx_) != 0; }

  /* Init only: keep a host object (a cudaGraphExec_t, a cuBLASLt plan) for
   * forward; `destroy` (may be NULL) runs when the harness ends. */
  void set_host_object(const char* name, void* object,
                       void (*destroy)(void*) = nullptr) const {
    if (api_->size < offsetof(kb_api, host_object) + sizeof(void*)) {
      fail("set_host_object: the harness is older than this header");
      return;
    }
    api_->set_host_object(ctx_, name, object, destroy);
  }
  /* Forward (and init): the object set_host_object kept, or NULL (and the
   * call fails) when there is none by that name. */
  template <typename T = void>
  T* host_object(const char* name) const {
    if (api_->size < offsetof(kb_api, host_object) + sizeof(void*)) {
      fail("host_object: the harness is older than this header");
      return nullptr;
    }
    return static_cast<T*>(api_->host_object(ctx_, name));
  }

 private:
  const kb_api* api_;
  kb_context* ctx_;
};

}  // namespace kb

/* KB_FORWARD(ctx) { body } defines the C entry point kb_forward, KB_INIT(ctx)
 * { body } the optional kb_init; inside the body `ctx` is a kb::Context&. */
#define KB_ENTRY_POINT_(symbol, body, ctx)                                  \
  static void body(const kb::Context& ctx);                                  \
  extern "C" int32_t symbol(const kb_api* api, kb_context* raw) {            \
    kb::Context wrapped(api, raw);                                           \
    body(wrapped);                                                           \
    return wrapped.failed() ? 1 : 0;                                         \
  }                                                                          \
  static void body(const kb::Context& ctx)

#define KB_FORWARD(ctx) KB_ENTRY_POINT_(kb_forward, kb_forward_body, ctx)
#define KB_INIT(ctx) KB_ENTRY_POINT_(kb_init, kb_init_body, ctx)

#endif /* __cplusplus */

#endif /* KB_SOLUTION_H */
