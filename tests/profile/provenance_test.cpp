#include "profile/provenance.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include "core/error.h"
#include "core/json.h"

namespace kb {
namespace {

profile::Activity kernel(const std::string& name, uint32_t stream, int64_t owner, uint64_t start = 100, uint64_t end = 200) {
  profile::Activity a;
  a.kind = profile::ActivityKind::Kernel;
  a.name = name;
  a.stream = stream;
  a.owner = owner;
  a.start_ns = start;
  a.end_ns = end;
  return a;
}

profile::ProvenancePolicy ownPolicy() {
  profile::ProvenancePolicy p;
  p.own_kernels = {"_Z11relu_kernelPKfPfi", "fused_epilogue"};
  return p;
}

std::vector<std::string> rules(const profile::ProvenanceReport& r) {
  std::vector<std::string> out;
  for (const auto& f : r.findings) out.push_back(f.rule);
  return out;
}

TEST(Provenance, OwnKernelsOnTheLaunchStreamAreClean) {
  std::vector<profile::Activity> acts = {kernel("_Z11relu_kernelPKfPfi", 7, 0), kernel("fused_epilogue", 7, 1)};
  profile::Activity ms;
  ms.kind = profile::ActivityKind::Memset;
  ms.name = "memset";
  ms.stream = 7;
  ms.owner = 1;
  acts.push_back(ms);
  profile::Activity harness = kernel("_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_", 7, profile::kOwnerHarness);
  acts.push_back(harness);  // the harness's own fill: not judged
  profile::ProvenanceReport r = profile::checkProvenance(acts, {{0, 1000}, {1, 1000}}, 7, ownPolicy());
  EXPECT_TRUE(r.ok()) << r.toJson().dump();
  EXPECT_EQ(r.activities, 3u);
}

TEST(Provenance, AtenKernelInACallIsForeign) {
  auto a = kernel("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_13BUnaryFunctorIfffNS0_15MulFunctorIfEEEESt5arrayIPcLm2EEEEviT0_T1_", 7, 0);
  profile::ProvenanceReport r = profile::checkProvenance({a}, {{0, 1000}}, 7, ownPolicy());
  ASSERT_EQ(rules(r), std::vector<std::string>{"foreign-kernel"});
  EXPECT_NE(r.findings[0].evidence.find("PyTorch ATen"), std::string::npos);
  EXPECT_NE(r.findings[0].evidence.find("vectorized_elementwise_kernel"), std::string::npos);
}

TEST(Provenance, TritonKernelIsForeign) {
  profile::ProvenanceReport r = profile::checkProvenance({kernel("triton_poi_fused_relu_0", 7, 2)}, {}, 7, ownPolicy());
  ASSERT_EQ(rules(r), std::vector<std::string>{"foreign-kernel"});
  EXPECT_NE(r.findings[0].evidence.find("Triton"), std::string::npos);
}

TEST(Provenance, CublasAllowedOnlyForGemmTasks) {
  auto gemm = kernel("sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", 7, 0);
  auto nvjet = kernel("nvjet_tst_128x64_64x8_2x1_v_bz_TNT", 7, 0);
  profile::ProvenancePolicy p = ownPolicy();
  EXPECT_FALSE(profile::checkProvenance({gemm, nvjet}, {}, 7, p).ok());
  p.allow_gemm_library = true;
  EXPECT_TRUE(profile::checkProvenance({gemm, nvjet}, {}, 7, p).ok());
  // cuDNN is another matter.
  auto conv = kernel("cudnn::cnn::implicit_convolve_sgemm", 7, 0);
  profile::ProvenanceReport r = profile::checkProvenance({conv}, {}, 7, p);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.findings[0].evidence.find("no convolution"), std::string::npos);
  p.allow_conv_library = true;
  EXPECT_TRUE(profile::checkProvenance({conv}, {}, 7, p).ok());
}

TEST(Provenance, UnknownKernelIsForeign) {
  profile::ProvenanceReport r = profile::checkProvenance({kernel("_Z9mystery_kPf", 7, 0)}, {}, 7, ownPolicy());
  ASSERT_EQ(rules(r), std::vector<std::string>{"foreign-kernel"});
  EXPECT_NE(r.findings[0].evidence.find("mystery_k(float*)"), std::string::npos);
}

TEST(Provenance, OtherStream) {
  profile::ProvenanceReport r = profile::checkProvenance({kernel("fused_epilogue", 9, 0)}, {{0, 0}}, 7, ownPolicy());
  ASSERT_EQ(rules(r), std::vector<std::string>{"other-stream"});
  EXPECT_NE(r.findings[0].evidence.find("stream 9"), std::string::npos);
}

TEST(Provenance, AfterReturn) {
  // The call's end marker started at 1000 ns; the kernel ran until 5000.
  profile::ProvenanceReport r = profile::checkProvenance({kernel("fused_epilogue", 7, 3, 500, 5000)}, {{3, 1000}}, 7, ownPolicy());
  ASSERT_EQ(rules(r), std::vector<std::string>{"after-return"});
  EXPECT_NE(r.findings[0].evidence.find("4 us after"), std::string::npos);
  // Ending before the marker is fine.
  EXPECT_TRUE(profile::checkProvenance({kernel("fused_epilogue", 7, 3, 500, 900)}, {{3, 1000}}, 7, ownPolicy()).ok());
}

TEST(Provenance, UnownedWorkFromAnotherThread) {
  profile::ProvenanceReport r = profile::checkProvenance({kernel("fused_epilogue", 7, profile::kOwnerUnknown)}, {}, 7, ownPolicy());
  ASSERT_EQ(rules(r), std::vector<std::string>{"unowned-work"});
  EXPECT_EQ(r.activities, 0u);
}

TEST(Provenance, FindingsAreCappedAndCounted) {
  std::vector<profile::Activity> acts;
  for (int i = 0; i < 20; ++i) acts.push_back(kernel("_Z1kv" + std::string(i, 'x'), 9, i));
  profile::ProvenanceReport r = profile::checkProvenance(acts, {}, 7, ownPolicy(), 3);
  // 3 other-stream + "... more", 3 foreign-kernel + "... more".
  EXPECT_EQ(r.findings.size(), 8u);
  EXPECT_NE(r.toJson().dump().find("and 17 more"), std::string::npos);
}

TEST(Provenance, LibraryAndFrameworkNames) {
  EXPECT_EQ(profile::kernelFramework("_ZN2at6native18elementwise_kernelILi128ELi4EZNS0_"), "aten");
  EXPECT_EQ(profile::kernelFramework("void at::native::reduce_kernel<512, 1>"), "aten");
  EXPECT_EQ(profile::kernelFramework("triton_red_fused_sum_1"), "triton");
  EXPECT_EQ(profile::kernelFramework("_Z11relu_kernelPKfPfi"), "");
  EXPECT_EQ(profile::kernelLibrary("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_aligna4_alignc4_execute_kernel__51a_cublas"), "cublas");
  EXPECT_EQ(profile::kernelLibrary("gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 4, 4, false, false>"), "cublas");
  EXPECT_EQ(profile::kernelLibrary("cudnn::ops::nchwToNhwcKernel"), "cudnn");
  EXPECT_EQ(profile::kernelLibrary("sm90_xmma_fprop_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nhwc"), "cudnn");
  EXPECT_EQ(profile::kernelLibrary("_Z11relu_kernelPKfPfi"), "");
  EXPECT_EQ(profile::demangle("_Z11relu_kernelPKfPfi"), "relu_kernel(float const*, float*, int)");
  EXPECT_EQ(profile::demangle("plain_c_name"), "plain_c_name");
}

TEST(Provenance, ActivityJsonRoundTrip) {
  profile::Activity a = kernel("k", 3, 5, 10, 20);
  a.bytes = 64;
  a.thread = 9;
  profile::Activity b = profile::Activity::fromJson(a.toJson());
  EXPECT_EQ(b.name, "k");
  EXPECT_EQ(b.stream, 3u);
  EXPECT_EQ(b.owner, 5);
  EXPECT_EQ(b.start_ns, 10u);
  EXPECT_EQ(b.end_ns, 20u);
  EXPECT_EQ(b.bytes, 64u);
  EXPECT_EQ(b.thread, 9u);
}

TEST(Provenance, KernelBreakdownSortsAndShares) {
  std::vector<profile::Activity> acts = {kernel("a", 7, 0, 0, 3000), kernel("b", 7, 0, 0, 1000), kernel("a", 7, 1, 0, 3000),
                                kernel("h", 7, profile::kOwnerHarness, 0, 99000)};
  auto k = profile::kernelBreakdown(acts);
  ASSERT_EQ(k.size(), 2u);
  EXPECT_EQ(k[0].name, "a");
  EXPECT_EQ(k[0].calls, 2u);
  EXPECT_DOUBLE_EQ(k[0].total_ms, 0.006);
  EXPECT_DOUBLE_EQ(k[0].mean_ms, 0.003);
  EXPECT_NEAR(k[0].share, 6.0 / 7.0, 1e-12);
  EXPECT_NEAR(k[1].share, 1.0 / 7.0, 1e-12);
}

}  // namespace
}  // namespace kb

namespace kb {
namespace {

TEST(Provenance, AnonymousNamespaceKernelsMatchTheirStub) {
  // Host stub in .symtab vs. the name CUPTI reports for the same kernel.
  profile::ProvenancePolicy p;
  p.own_kernels = {"_ZN12_GLOBAL__N_112softmax_rowsEPKfPfi"};
  profile::Activity a = kernel("_ZN12_GLOBAL__N_112softmax_rowsEPKfPfi", 7, 0);
  EXPECT_TRUE(profile::checkProvenance({a}, {}, 7, p).ok());
  EXPECT_EQ(profile::normalizedKernelName("_ZN12_GLOBAL__N_112softmax_rowsEPKfPfi"), "softmax_rows(float const*, float*, int)");
}

}  // namespace
}  // namespace kb

namespace kb {
namespace {

// A cache that replays its result with one copy on a hit: the timed call
// launches none of the GEMM kernel the verified calls launched.
TEST(Provenance, SkippedWorkIsAReplay) {
  profile::ProvenancePolicy p;
  p.own_kernels = {"_Z5sgemmPKfS0_Pfiii", "_Z4tailPf"};
  profile::Activity copy;
  copy.kind = profile::ActivityKind::Memcpy;
  copy.name = "DtoD";
  copy.stream = 7;
  copy.owner = 3;
  std::vector<profile::Activity> acts = {kernel("_Z5sgemmPKfS0_Pfiii", 7, 0), kernel("_Z4tailPf", 7, 0),
                                kernel("_Z5sgemmPKfS0_Pfiii", 7, 1),  // seed 1 without tail: not common
                                kernel("_Z5sgemmPKfS0_Pfiii", 7, 2),  // timed call 2 computes
                                copy};                                 // timed call 3 replays
  std::vector<profile::CallWindow> calls = {{0, 0, "seed"}, {1, 0, "seed"}, {2, 0, "timed"}, {3, 0, "timed"}};
  profile::ProvenanceReport r = profile::checkProvenance(acts, calls, 7, p);
  ASSERT_EQ(rules(r), std::vector<std::string>{"skipped-work"});
  EXPECT_NE(r.findings[0].evidence.find("timed call 3 did not launch sgemm(float const*, float const*, float*, int, int, int)"),
            std::string::npos)
      << r.findings[0].evidence;
  // Without verified calls, the warm-up calls are the reference.
  calls = {{0, 0, "warmup"}, {1, 0, "warmup"}, {2, 0, "timed"}, {3, 0, "timed"}};
  EXPECT_EQ(rules(profile::checkProvenance(acts, calls, 7, p)), std::vector<std::string>{"skipped-work"});
  // Every timed call computing: clean.
  acts.back() = kernel("_Z5sgemmPKfS0_Pfiii", 7, 3);
  EXPECT_TRUE(profile::checkProvenance(acts, calls, 7, p).ok());
}

}  // namespace
}  // namespace kb

// ---- issue 35: a timed call's activities judged by structure and time -------

namespace kb {
namespace {
namespace timed {

using namespace profile::harness_ids;

profile::Activity raw(const std::string& name, uint32_t stream, uint64_t external, uint64_t start, uint64_t end,
                      uint32_t graph = 0) {
  profile::Activity a = kernel(name, stream, profile::kOwnerUnknown, start, end);
  a.external = external;
  a.graph = graph;
  return a;
}

// Call index 4 (id 5): the harness's flush before, its spin, the call's
// kernels, its marker.
std::vector<profile::Activity> honestCall() {
  return {raw("_ZN2at6native18elementwise_kernelFlush", 7, kHarness, 0, 50000),
          raw("spin", 7, kSpinBase + 4, 60000, 260000),
          raw("_Z11relu_kernelPKfPfi", 7, 5, 270000, 400000),
          raw("fill_marker", 7, kMarkerBase + 4, 410000, 412000)};
}

TEST(TimedCall, HonestCallIsOwnedAndWindowed) {
  profile::TimedCallActivities t = profile::classifyTimedCall(honestCall(), 4);
  EXPECT_TRUE(t.problems.empty());
  ASSERT_EQ(t.owned.size(), 1u);
  EXPECT_EQ(t.owned[0].owner, 4);
  EXPECT_EQ(t.window.start_ns, 260000u);
  EXPECT_EQ(t.window.marker_start_ns, 410000u);
  EXPECT_EQ(t.marker_stream, 7u);
  EXPECT_TRUE(profile::checkProvenance(t.owned, {t.window}, 7, ownPolicy()).ok());
}

TEST(TimedCall, WorkLabelledAsTheHarnessesIsTheCallsAndAFinding) {
  // The class-1 attack: its own kernel bracketed with the harness's id so
  // that provenance would drop it.
  auto acts = honestCall();
  acts.push_back(raw("_ZN2at6native29vectorized_elementwise_kernelILi4E", 7, kHarness, 280000, 390000));
  profile::TimedCallActivities t = profile::classifyTimedCall(acts, 4);
  ASSERT_EQ(t.problems.size(), 1u);
  EXPECT_NE(t.problems[0].find("labelled as the harness's"), std::string::npos);
  EXPECT_EQ(t.owned.size(), 2u);  // counted as the call's all the same
  // A second "marker" (its own kernel under the marker's id) is refused too.
  auto twice = honestCall();
  twice.push_back(raw("_Z11relu_kernelPKfPfi", 7, kMarkerBase + 4, 300000, 320000));
  EXPECT_FALSE(profile::classifyTimedCall(twice, 4).problems.empty());
}

TEST(TimedCall, HarnessFillInsideTheCallIsNotTheCalls) {
  auto acts = honestCall();
  acts.push_back(raw("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)",
                     7, kInCallBase + 4, 280000, 290000));
  profile::TimedCallActivities t = profile::classifyTimedCall(acts, 4);
  EXPECT_TRUE(t.problems.empty());
  EXPECT_EQ(t.owned.size(), 1u);
  // Its own kernel under the in-call id is the call's (and ATen-looking
  // names do not pass as fills unless they are one).
  auto own = honestCall();
  own.push_back(raw("_Z11relu_kernelPKfPfi", 7, kInCallBase + 4, 280000, 290000));
  EXPECT_EQ(profile::classifyTimedCall(own, 4).owned.size(), 2u);
}

TEST(TimedCall, GraphBranchesInsideTheWindowAreNotOtherStream) {
  // A graph launched on the launch stream: its two parallel branches run
  // on the graph's own streams (9, 11), inside the call's window.
  auto acts = honestCall();
  acts.push_back(raw("_Z11relu_kernelPKfPfi", 9, 5, 270000, 350000, 3));
  acts.push_back(raw("fused_epilogue", 11, 5, 275000, 380000, 3));
  profile::TimedCallActivities t = profile::classifyTimedCall(acts, 4);
  EXPECT_TRUE(profile::checkProvenance(t.owned, {t.window}, 7, ownPolicy()).ok())
      << profile::checkProvenance(t.owned, {t.window}, 7, ownPolicy()).toJson().dump();
  // A plain kernel on another stream still is; and graph work that began
  // during the head start is before-start.
  auto other = honestCall();
  other.push_back(raw("fused_epilogue", 11, 5, 275000, 380000));
  auto t2 = profile::classifyTimedCall(other, 4);
  EXPECT_EQ(rules(profile::checkProvenance(t2.owned, {t2.window}, 7, ownPolicy())), std::vector<std::string>{"other-stream"});
  auto early = honestCall();
  early.push_back(raw("fused_epilogue", 11, 5, 100000, 380000, 3));
  auto t3 = profile::classifyTimedCall(early, 4);
  auto r3 = rules(profile::checkProvenance(t3.owned, {t3.window}, 7, ownPolicy()));
  EXPECT_NE(std::find(r3.begin(), r3.end(), "before-start"), r3.end());
}

TEST(Provenance, GraphBranchesOfASeedCallAreNotOtherStream) {
  // Seed and warm-up calls have no start event (the device was synchronised
  // before them): a graph's branch that ended before the marker is the
  // call's; one still running after it is after-return, and a plain kernel
  // on another stream is other-stream, as in a timed call. Seen on the H200:
  // every call after init refused until this held.
  profile::CallWindow seed{2, 500000, "seed", 0};
  auto branch = kernel("_Z11relu_kernelPKfPfi", 158, 2, 100000, 300000);
  branch.graph = 7;
  EXPECT_TRUE(profile::checkProvenance({branch}, {seed}, 13, ownPolicy()).ok());
  auto late = branch;
  late.end_ns = 600000;
  EXPECT_EQ(rules(profile::checkProvenance({late}, {seed}, 13, ownPolicy())),
            (std::vector<std::string>{"other-stream", "after-return"}));
  auto plain = branch;
  plain.graph = 0;
  EXPECT_EQ(rules(profile::checkProvenance({plain}, {seed}, 13, ownPolicy())), std::vector<std::string>{"other-stream"});
  // A timed call without a start event gives its graph work no pass.
  profile::CallWindow timed_call{2, 500000, "timed", 0};
  EXPECT_EQ(rules(profile::checkProvenance({branch}, {timed_call}, 13, ownPolicy())),
            std::vector<std::string>{"other-stream"});
}

TEST(TimedCall, LegacyStreamWorkInsideTheWindowIsAPythonCandidates) {
  // A Python-format candidate's <<<grid, block>>> launch runs on the legacy
  // default stream (id 3 here), which the adapter orders inside the call:
  // accepted there when the policy names that stream, never otherwise, and
  // never outside the window.
  auto acts = honestCall();
  acts.push_back(raw("_Z11relu_kernelPKfPfi", 3, 5, 270000, 350000));
  profile::TimedCallActivities t = profile::classifyTimedCall(acts, 4);
  profile::ProvenancePolicy python = ownPolicy();
  python.legacy_stream = 3;
  EXPECT_TRUE(profile::checkProvenance(t.owned, {t.window}, 7, python).ok())
      << profile::checkProvenance(t.owned, {t.window}, 7, python).toJson().dump();
  EXPECT_EQ(rules(profile::checkProvenance(t.owned, {t.window}, 7, ownPolicy())), std::vector<std::string>{"other-stream"});
  // Another stream than the legacy one is still other-stream.
  python.legacy_stream = 9;
  EXPECT_EQ(rules(profile::checkProvenance(t.owned, {t.window}, 7, python)), std::vector<std::string>{"other-stream"});
  // Legacy-stream work that began in the head start is outside the window.
  python.legacy_stream = 3;
  auto early = honestCall();
  early.push_back(raw("_Z11relu_kernelPKfPfi", 3, 5, 100000, 350000));
  auto t2 = profile::classifyTimedCall(early, 4);
  auto r2 = rules(profile::checkProvenance(t2.owned, {t2.window}, 7, python));
  EXPECT_NE(std::find(r2.begin(), r2.end(), "other-stream"), r2.end());
  EXPECT_NE(std::find(r2.begin(), r2.end(), "before-start"), r2.end());
}

TEST(TimedCall, WorkFromAnotherThreadIsUnowned) {
  auto acts = honestCall();
  acts.push_back(raw("_Z11relu_kernelPKfPfi", 7, 0, 280000, 300000));  // no external id: another thread
  profile::TimedCallActivities t = profile::classifyTimedCall(acts, 4);
  EXPECT_TRUE(t.problems.empty());
  auto r = rules(profile::checkProvenance(t.owned, {t.window}, 7, ownPolicy()));
  EXPECT_NE(std::find(r.begin(), r.end(), "unowned-work"), r.end());
}

TEST(TimedCall, WorkBetweenCallsWithoutTheHarnesssIdIsNotDropped) {
  // A thread of the candidate's launches between two calls (before this
  // call's spin): no id, or the previous call's id. Neither is harness work.
  auto acts = honestCall();
  acts.push_back(raw("_Z11relu_kernelPKfPfi", 7, 0, 10000, 40000));
  acts.push_back(raw("_Z11relu_kernelPKfPfi", 7, 4, 20000, 45000));
  profile::TimedCallActivities t = profile::classifyTimedCall(acts, 4);
  EXPECT_EQ(t.owned.size(), 3u);
  auto r = rules(profile::checkProvenance(t.owned, {t.window}, 7, ownPolicy()));
  EXPECT_NE(std::find(r.begin(), r.end(), "unowned-work"), r.end());
  EXPECT_NE(std::find(r.begin(), r.end(), "before-start"), r.end());
}

TEST(TimedCall, BusyTimeIsTheUnionOfIntervals) {
  // Programmatic dependent launch: the epilogue overlaps the GEMM's tail.
  std::vector<profile::Activity> acts = {kernel("gemm", 7, 0, 1'000'000, 3'000'000),
                                         kernel("epilogue", 7, 0, 2'500'000, 3'500'000),
                                         kernel("later", 7, 0, 4'000'000, 4'500'000)};
  EXPECT_DOUBLE_EQ(profile::busyMilliseconds(acts), 3.0);  // 2.5 + 0.5, not 3.5 + 0.5
  EXPECT_DOUBLE_EQ(profile::busyMilliseconds({}), 0.0);
}

}  // namespace timed
}  // namespace
}  // namespace kb

// The own kernels' share of the timed calls' GPU time (provenance.own_kernel_share).
namespace kb {
namespace {

profile::OwnCode ownCode(std::set<std::string> functions, const std::string& from) {
  profile::OwnCode own;
  own.from = from;
  own.add(functions);
  return own;
}

profile::Activity copy(profile::ActivityKind kind, int64_t owner, uint64_t start, uint64_t end) {
  profile::Activity a = kernel(kind == profile::ActivityKind::Memcpy ? "DtoD" : "memset", 7, owner, start, end);
  a.kind = kind;
  return a;
}

const char* kAtenAdd =
    "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIfEESt5arrayIPcLm3EEEEviT_T0_";
const char* kCublasGemm = "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_execute_kernel__5x_cublas";

TEST(OwnKernelShare, NativeSolutionOwnAgainstCublasAndCopies) {
  // Two timed calls: an own kernel of 3 us and a cuBLAS GEMM of 1 us each,
  // a 2 us memcpy in one; the harness's work and an init call's are not timed.
  profile::OwnCode own = ownCode({"_Z11relu_kernelPKfPfi"}, "solution_library");
  std::vector<profile::Activity> acts = {
      kernel("_Z11relu_kernelPKfPfi", 7, 4, 0, 3000), kernel(kCublasGemm, 7, 4, 3000, 4000),
      kernel("_Z11relu_kernelPKfPfi", 7, 5, 0, 3000), kernel(kCublasGemm, 7, 5, 3000, 4000),
      copy(profile::ActivityKind::Memcpy, 5, 4000, 6000),
      kernel("_Z11relu_kernelPKfPfi", 7, profile::kOwnerHarness, 0, 90000)};
  profile::OwnKernelShare s = profile::ownKernelShare(acts, own);
  EXPECT_DOUBLE_EQ(s.own_ms, 0.006);
  EXPECT_DOUBLE_EQ(s.library_ms, 0.002);
  EXPECT_DOUBLE_EQ(s.copy_ms, 0.002);
  ASSERT_TRUE(s.share());
  EXPECT_DOUBLE_EQ(*s.share(), 0.75);
  EXPECT_DOUBLE_EQ(s.library_by_origin.at("cublas"), 0.002);
  EXPECT_EQ(s.own_kernels, 1u);
  EXPECT_EQ(s.library_kernels, 1u);
  EXPECT_EQ(s.timed_calls, 2u);
  EXPECT_TRUE(s.ambiguous.empty());
  Json j = s.toJson();
  EXPECT_DOUBLE_EQ(j["share"].get<double>(), 0.75);
  EXPECT_EQ(j["own_from"], "solution_library");
  EXPECT_DOUBLE_EQ(j["library_by_origin"]["cublas"].get<double>(), 0.002);
}

TEST(OwnKernelShare, PythonSolutionExtensionKernelsAgainstTorchOps) {
  // A ModelNew whose load_inline extension defines fused_gelu (an
  // anonymous-namespace kernel: matched on its normalized name) and whose
  // forward also runs a torch add (ATen), a Triton kernel and a kernel of
  // no known library.
  profile::OwnCode own = ownCode({"_ZN12_GLOBAL__N_110fused_geluEPKfPfi"}, "extension_libraries");
  std::vector<profile::Activity> acts = {kernel("_ZN12_GLOBAL__N_110fused_geluEPKfPfi", 7, 3, 0, 1000),
                                         kernel(kAtenAdd, 7, 3, 1000, 4000),
                                         kernel("triton_poi_fused_add_0", 7, 3, 4000, 5000),
                                         kernel("_Z7mysteryPf", 7, 3, 5000, 6000)};
  profile::OwnKernelShare s = profile::ownKernelShare(acts, own);
  EXPECT_DOUBLE_EQ(s.own_ms, 0.001);
  EXPECT_DOUBLE_EQ(s.library_ms, 0.005);
  EXPECT_NEAR(*s.share(), 1.0 / 6.0, 1e-12);
  EXPECT_DOUBLE_EQ(s.library_by_origin.at("aten"), 0.003);
  EXPECT_DOUBLE_EQ(s.library_by_origin.at("triton"), 0.001);
  EXPECT_DOUBLE_EQ(s.library_by_origin.at("other"), 0.001);
  EXPECT_EQ(s.library_kernels, 3u);
  // The same calls with no extension at all: everything is library work.
  profile::OwnKernelShare none = profile::ownKernelShare(acts, profile::OwnCode{});
  EXPECT_DOUBLE_EQ(*none.share(), 0.0);
  EXPECT_EQ(none.toJson()["own_from"], "none");
}

TEST(OwnKernelShare, AKernelNamedLikeALibrarysIsOwnButAmbiguous) {
  // The extension instantiates ATen's elementwise kernel itself (or names a
  // function after it): CUPTI reports the name only, so the kernel counts
  // as own, and the report lists it with the time it took.
  profile::OwnCode own = ownCode({kAtenAdd, "_Z9my_gemm_kPKfS0_Pf"}, "extension_libraries");
  std::vector<profile::Activity> acts = {kernel(kAtenAdd, 7, 0, 0, 2000), kernel(kAtenAdd, 7, 1, 0, 2000),
                                         kernel("_Z9my_gemm_kPKfS0_Pf", 7, 0, 2000, 3000)};
  profile::OwnKernelShare s = profile::ownKernelShare(acts, own);
  EXPECT_DOUBLE_EQ(*s.share(), 1.0);
  ASSERT_EQ(s.ambiguous.size(), 2u);
  EXPECT_EQ(s.ambiguous[0].also, "aten");
  EXPECT_DOUBLE_EQ(s.ambiguous[0].ms, 0.004);
  EXPECT_NE(s.ambiguous[0].name.find("at::native::vectorized_elementwise_kernel"), std::string::npos);
  EXPECT_EQ(s.ambiguous[1].also, "cublas");  // "gemm" in an own name is listed too
  EXPECT_DOUBLE_EQ(s.ambiguous_ms, 0.005);
}

TEST(OwnKernelShare, NoKernelTimeHasNoShare) {
  profile::OwnKernelShare s = profile::ownKernelShare({copy(profile::ActivityKind::Memset, 0, 0, 1000)}, profile::OwnCode{});
  EXPECT_FALSE(s.share());
  EXPECT_TRUE(s.toJson()["share"].is_null());
  EXPECT_DOUBLE_EQ(s.copy_ms, 0.001);
  EXPECT_FALSE(profile::ownKernelShare({}, profile::OwnCode{}).share());
}

TEST(OwnKernelShare, BreakdownNamesEachKernelsOrigin) {
  profile::OwnCode own = ownCode({"_Z11relu_kernelPKfPfi"}, "solution_library");
  std::vector<profile::Activity> acts = {kernel("_Z11relu_kernelPKfPfi", 7, 0, 0, 3000), kernel(kAtenAdd, 7, 0, 0, 2000),
                                         copy(profile::ActivityKind::Memcpy, 0, 0, 1000)};
  std::map<std::string, std::string> origin;
  for (const auto& k : profile::kernelBreakdown(acts, &own)) origin[k.name] = k.origin;
  EXPECT_EQ(origin["relu_kernel(float const*, float*, int)"], "own");
  EXPECT_EQ(origin["[memcpy DtoD]"], "copy");
  EXPECT_EQ(profile::kernelOrigin(acts[1], own), "aten");
  // Without the own code, no origin (and none in the JSON).
  EXPECT_FALSE(profile::kernelBreakdown(acts).front().toJson().contains("origin"));
}

// readOwnCode on real ELF files: this test's own executable stands in for
// a built library.
class ReadOwnCode : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("kb-owncode-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ / "ext");
    self_ = std::filesystem::read_symlink("/proc/self/exe");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_, self_;
};

TEST_F(ReadOwnCode, NativeLibraryIsItsOwnCode) {
  std::filesystem::copy_file(self_, dir_ / "solution.so");
  profile::OwnCode own = profile::readOwnCode((dir_ / "solution.so").string());
  EXPECT_EQ(own.from, "solution_library");
  EXPECT_EQ(own.libraries, std::vector<std::string>{"solution.so"});
  EXPECT_TRUE(own.owns("main"));
  EXPECT_EQ(profile::readOwnCode("").from, "none");
}

TEST_F(ReadOwnCode, PythonSolutionReadsItsExtensionsNotTheAdapter) {
  // The adapter (solution.so) is not an ELF file here: reading it would throw.
  { std::ofstream(dir_ / "solution.so") << "not an ELF file"; }
  std::filesystem::copy_file(self_, dir_ / "ext" / "fused.so");
  writeJsonFile(dir_ / "pymodel.json", Json{{"entry", "model_new.py"}, {"extensions", {{"fused", "ext/fused.so"}}}});
  profile::OwnCode own = profile::readOwnCode((dir_ / "solution.so").string());
  EXPECT_EQ(own.from, "extension_libraries");
  EXPECT_EQ(own.libraries, std::vector<std::string>{"ext/fused.so"});
  EXPECT_TRUE(own.owns("main"));
  // No extensions: no own code at all.
  writeJsonFile(dir_ / "pymodel.json", Json{{"entry", "model_new.py"}, {"extensions", Json::object()}});
  profile::OwnCode none = profile::readOwnCode((dir_ / "solution.so").string());
  EXPECT_EQ(none.from, "extension_libraries");
  EXPECT_TRUE(none.kernels.empty());
  // A library outside the build's folder is not read.
  writeJsonFile(dir_ / "pymodel.json", Json{{"extensions", {{"x", "../x.so"}}}});
  EXPECT_THROW(profile::readOwnCode((dir_ / "solution.so").string()), Error);
}

}  // namespace
}  // namespace kb

namespace kb {
namespace {

TEST(Provenance, TorchOpsAllowedMakesLibraryKernelsPassButNotTriton) {
  // A ModelNew under the kernelbench policy: its extension's kernel, a torch
  // add (ATen), a cuBLAS GEMM in a task without one, torch's softmax kernel
  // (outside namespace at) pass; a Triton kernel (torch.compile, refused by
  // py-compiler) does not.
  profile::ProvenancePolicy p;
  p.own_kernels = {"_Z10fused_geluPKfPfi"};
  p.torch_ops_allowed = true;
  std::vector<profile::Activity> torch_ops = {
      kernel("_Z10fused_geluPKfPfi", 7, 0), kernel(kAtenAdd, 7, 0), kernel(kCublasGemm, 7, 0),
      kernel("_Z20softmax_warp_forwardIfffLi10ELb0ELb0EEvPT0_PKT_iiiPKbib", 7, 0)};
  EXPECT_TRUE(profile::checkProvenance(torch_ops, {}, 7, p).ok());
  profile::ProvenanceReport r = profile::checkProvenance({kernel("triton_poi_fused_add_0", 7, 0)}, {}, 7, p);
  ASSERT_EQ(rules(r), std::vector<std::string>{"foreign-kernel"});
  EXPECT_NE(r.findings[0].evidence.find("Triton"), std::string::npos);
  // The other rules still hold: another stream is other-stream.
  EXPECT_EQ(rules(profile::checkProvenance({kernel(kAtenAdd, 9, 0)}, {{0, 0}}, 7, p)),
            std::vector<std::string>{"other-stream"});
  // Off (the default): the same ATen kernel is foreign.
  p.torch_ops_allowed = false;
  EXPECT_EQ(rules(profile::checkProvenance({kernel(kAtenAdd, 7, 0)}, {}, 7, p)), std::vector<std::string>{"foreign-kernel"});
}

}  // namespace
}  // namespace kb
