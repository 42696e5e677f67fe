#include "build/nvrtc.h"

#include <dlfcn.h>

#include <chrono>
#include <map>
#include <mutex>

namespace kb::build {

struct Nvrtc::Api {
  using Program = void*;
  int (*version)(int*, int*);
  int (*create)(Program*, const char*, const char*, int, const char* const*, const char* const*);
  int (*compile)(Program, int, const char* const*);
  int (*logSize)(Program, size_t*);
  int (*log)(Program, char*);
  int (*cubinSize)(Program, size_t*);
  int (*destroy)(Program*);
  const char* (*errorString)(int);
};

const Nvrtc* Nvrtc::get(const std::filesystem::path& cuda_home) {
  static std::mutex mu;
  static std::map<std::string, Nvrtc*> loaded;  // never freed: lives as long as the process
  std::lock_guard<std::mutex> lock(mu);
  auto it = loaded.find(cuda_home.string());
  if (it != loaded.end()) return it->second;
  Nvrtc* result = nullptr;
  void* h = nullptr;
  for (const char* name : {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"}) {
    h = ::dlopen((cuda_home / "lib64" / name).c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h) break;
  }
  if (h) {
    auto* api = new Api{};
    bool ok = true;
    auto sym = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(h, name));
      ok = ok && fn != nullptr;
    };
    sym(api->version, "nvrtcVersion");
    sym(api->create, "nvrtcCreateProgram");
    sym(api->compile, "nvrtcCompileProgram");
    sym(api->logSize, "nvrtcGetProgramLogSize");
    sym(api->log, "nvrtcGetProgramLog");
    sym(api->cubinSize, "nvrtcGetCUBINSize");
    sym(api->destroy, "nvrtcDestroyProgram");
    sym(api->errorString, "nvrtcGetErrorString");
    if (ok) {
      int major = 0, minor = 0;
      api->version(&major, &minor);
      result = new Nvrtc();
      result->api_ = api;
      result->version_ = std::to_string(major) + "." + std::to_string(minor);
    } else {
      delete api;
    }
  }
  loaded[cuda_home.string()] = result;
  return result;
}

NvrtcOutcome Nvrtc::compile(const std::string& source, const std::string& name,
                            const std::vector<std::string>& options) const {
  NvrtcOutcome out;
  auto t0 = std::chrono::steady_clock::now();
  Api::Program prog = nullptr;
  int rc = api_->create(&prog, source.c_str(), name.c_str(), 0, nullptr, nullptr);
  if (rc != 0) {
    out.log = std::string("nvrtcCreateProgram: ") + api_->errorString(rc);
    return out;
  }
  std::vector<const char*> opts;
  for (const auto& o : options) opts.push_back(o.c_str());
  rc = api_->compile(prog, static_cast<int>(opts.size()), opts.data());
  size_t n = 0;
  api_->logSize(prog, &n);
  if (n > 1) {
    out.log.resize(n);
    api_->log(prog, out.log.data());
    out.log.resize(n - 1);  // drop the NUL
  }
  out.ok = rc == 0;
  if (out.ok) api_->cubinSize(prog, &out.cubin_bytes);
  api_->destroy(&prog);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace kb::build
