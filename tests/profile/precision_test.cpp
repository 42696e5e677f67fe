// Precision classes (kernel names, SASS), the strict/paper judgement, the
// GPU peak table and the FLOPs floor kbprof builds from them.
#include "profile/precision.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>

#include "profile/gpu_peak.h"
#include "profile/plausibility.h"
#include "profile/sass.h"

namespace kb {
namespace {

profile::Activity kernel(const std::string& name, int64_t owner) {
  profile::Activity a;
  a.kind = profile::ActivityKind::Kernel;
  a.name = name;
  a.stream = 7;
  a.owner = owner;
  return a;
}

profile::PrecisionPolicy strictFp32() {
  profile::PrecisionPolicy p;
  p.contract = "strict";
  p.task_float_dtype = "float32";
  return p;
}

TEST(KernelPrecision, LibraryNamesAsTheLibrariesWriteThem) {
  // cuBLAS/cuBLASLt on Ampere/Hopper (the first two recorded by CUPTI in
  // this project's runs, docs/gpu-validation.md and tests/profile).
  EXPECT_EQ(profile::libraryKernelPrecision("void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>("
                                   "cutlass_80_simt_sgemm_256x128_8x4_nn_align1::Params)"),
            "fp32");
  EXPECT_EQ(profile::libraryKernelPrecision("sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1_"
                                   "execute_segment_k_off_kernel__5x_cublas"),
            "tf32");
  EXPECT_EQ(profile::libraryKernelPrecision("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_"
                                   "aligna4_alignc4_execute_kernel__51_cublas"),
            "fp32");
  EXPECT_EQ(profile::libraryKernelPrecision("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_"
                                   "execute_segment_k_off_kernel__5x_cublas"),
            "bf16");
  EXPECT_EQ(profile::libraryKernelPrecision("ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn"), "fp16");
  EXPECT_EQ(profile::libraryKernelPrecision("volta_h884gemm_64x64_ldg8_nn"), "fp16");
  EXPECT_EQ(profile::libraryKernelPrecision("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128_16x4_nn_align4>("
                                   "cutlass_80_tensorop_s1688gemm_128x128_16x4_nn_align4::Params)"),
            "tf32");
  EXPECT_EQ(profile::libraryKernelPrecision("cutlass_80_tensorop_d884gemm_64x64_16x4_nn_align1"), "fp64");
  // nvjet: operand letter first (h fp16, t bf16, s fp32 operands on tensor cores = TF32).
  EXPECT_EQ(profile::libraryKernelPrecision("nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NNT"), "fp16");
  EXPECT_EQ(profile::libraryKernelPrecision("nvjet_sm90_hss_64x8_64x16_1x1_h_bz_splitK_NNT"), "fp16");
  EXPECT_EQ(profile::libraryKernelPrecision("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_TNT"), "bf16");
  EXPECT_EQ(profile::libraryKernelPrecision("nvjet_sss_128x256_64x4_2x1_v_bz_TNN"), "tf32");
  // cuDNN.
  EXPECT_EQ(profile::libraryKernelPrecision("sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x128x16"),
            "tf32");
  EXPECT_EQ(profile::libraryKernelPrecision("volta_scudnn_128x64_relu_interior_nn_v1"), "fp32");
  EXPECT_EQ(profile::libraryKernelPrecision("void implicit_convolve_sgemm<float, float, 1024, 5, 5, 3, 3, 3, 1, false>(int)"),
            "fp32");
  // FP8, INT8.
  EXPECT_EQ(profile::libraryKernelPrecision("sm90_xmma_gemm_e4m3e4m3_e4m3f32_f32_tn_n_tilesize128x128x128"), "fp8");
  EXPECT_EQ(profile::libraryKernelPrecision("sm80_xmma_gemm_i8i8_i8i32_f32_tn_n_tilesize128x128x64"), "int8");
  // The reduction that follows a split-K GEMM: fp32 whatever the GEMM was.
  EXPECT_EQ(profile::libraryKernelPrecision("void cublasLt::splitKreduce_kernel<32, 16, int, float, float, float, float, "
                                   "true, false, false>(cublasLt::cublasSplitKParams<float>, float const*)"),
            "fp32");
  EXPECT_EQ(profile::libraryKernelPrecision("some_kernel_without_markers"), "unknown");
}

// The names torch 2.11 (CUDA 13.0 cuBLAS/cuBLASLt/cuDNN) launched on the
// H200 for the same matmul and conv2d with TF32 off and on, fp16, bf16
// (torch.profiler, 2026-12-01; M x K x N 2048^3 and 256 x 8192 x 512).
TEST(KernelPrecision, RecordedOnTheH200) {
  const std::pair<const char*, const char*> seen[] = {
      {"void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>(cutlass_80_simt_sgemm_256x128_8x4_nn_"
       "align1::Params)", "fp32"},
      {"sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x256x32_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_"
       "cublas", "tf32"},
      // TF32 at K = 8192: no "tf32" in the name, the m16n8k8 shape says it.
      {"void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128_32x5_nn_align4>(cutlass_80_tensorop_s1688gemm_"
       "128x128_32x5_nn_align4::Params)", "tf32"},
      {"void cublasLt::splitKreduce_kernel<32, 16, int, float, float, float, float, false, float, float, float, true, "
       "false, false, false>(cublasLt::cublasSplitKParams<float>, float const*, float const*, float*, float*)", "fp32"},
      {"nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_NNT", "fp16"},
      {"nvjet_sm90_hsh_64x64_64x13_4x2_h_bz_splitK_NNT", "fp16"},
      {"nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT", "bf16"},
      {"void cublasLt::splitKreduce_kernel<32, 16, int, float, __half, float, __half, false, float, __half, __half, "
       "true, false, false, false>(cublasLt::cublasSplitKParams<float>, float const*, __half const*)", "fp16"},
      {"sm80_xmma_fprop_implicit_gemm_f32f32_f32f32_f32_nchwkcrs_nchw_tilesize128x32x8_stage3_warpsize2x2x1_g1_ffma_"
       "aligna4_alignc4_execute_kernel__5x_cudnn", "fp32"},
      {"sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x64x32_stage5_warpsize2x2x1_g1_"
       "tensor16x8x8_execute_kernel__5x_cudnn", "tf32"},
  };
  for (const auto& [name, cls] : seen) EXPECT_EQ(profile::libraryKernelPrecision(name), cls) << name;
}

TEST(KernelPrecision, ReducedIsRelativeToTheTask) {
  EXPECT_TRUE(profile::isReducedPrecision("tf32", "float32"));
  EXPECT_TRUE(profile::isReducedPrecision("bf16", "float32"));
  EXPECT_TRUE(profile::isReducedPrecision("tensor", "float32"));
  EXPECT_FALSE(profile::isReducedPrecision("fp32", "float32"));
  EXPECT_FALSE(profile::isReducedPrecision("unknown", "float32"));
  EXPECT_FALSE(profile::isReducedPrecision("fp16", "float16"));
  EXPECT_FALSE(profile::isReducedPrecision("tf32", "float16"));
  EXPECT_TRUE(profile::isReducedPrecision("bf16", "float16"));
  EXPECT_TRUE(profile::isReducedPrecision("fp8", "bfloat16"));
  EXPECT_TRUE(profile::isReducedPrecision("fp32", "float64"));
  EXPECT_FALSE(profile::isReducedPrecision("tf32", ""));  // no floating tensors: nothing to reduce
  EXPECT_EQ(profile::narrowerPrecision("fp32", "tf32"), "tf32");
  EXPECT_EQ(profile::narrowerPrecision("unknown", "fp16"), "fp16");
  EXPECT_EQ(profile::narrowerPrecision("bf16", "fp16"), "bf16");
}

TEST(JudgePrecision, StrictRefusesAReducedLibraryKernelAndNamesIt) {
  const std::string tf32 = "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1_"
                           "execute_segment_k_off_kernel__5x_cublas";
  std::vector<profile::Activity> acts = {kernel(tf32, 0), kernel(tf32, 1), kernel("_Z8epiloguePfi", 1),
                                kernel("_ZN2at6native18elementwise_kernelEv", profile::kOwnerHarness)};
  profile::PrecisionReport r = profile::judgePrecision(acts, {"_Z8epiloguePfi"}, strictFp32(), {}, "none");
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].rule, "reduced-precision");
  EXPECT_NE(r.findings[0].evidence.find(tf32), std::string::npos) << r.findings[0].evidence;
  EXPECT_NE(r.findings[0].evidence.find("tf32"), std::string::npos);
  EXPECT_EQ(r.candidate_class, "tf32");
  ASSERT_EQ(r.kernels.size(), 2u);  // the harness's kernel is not the candidate's
  EXPECT_EQ(r.kernels[0].origin, "library");
  EXPECT_TRUE(r.kernels[0].reduced);
  EXPECT_EQ(r.kernels[1].origin, "own");
  EXPECT_EQ(r.kernels[1].cls, "unknown");
  Json j = r.toJson();
  EXPECT_EQ(j["contract"]["name"], "strict");
  EXPECT_EQ(j["candidate_class"], "tf32");
  EXPECT_FALSE(j["ok"].get<bool>());
}

TEST(JudgePrecision, PaperAllowsItAndStillNamesTheClass) {
  profile::PrecisionPolicy paper = strictFp32();
  paper.contract = "paper";
  paper.reduced_precision_allowed = true;
  profile::PrecisionReport r = profile::judgePrecision({kernel("nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NNT", 0)}, {}, paper, {}, "none");
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.candidate_class, "fp16");
  EXPECT_NE(r.summary().find("paper contract"), std::string::npos) << r.summary();
}

TEST(JudgePrecision, OwnKernelsAreInformationOnly) {
  // A 3xTF32 GEMM of the candidate's own: TF32 tensor-core SASS, but only
  // accuracy judges own kernels.
  std::map<std::string, profile::SassKernel> sass;
  sass["gemm_3xtf32(float const*, float const*, float*, int, int, int)"] = {"tf32", {"HMMA.1684.F32.TF32"}};
  std::vector<profile::Activity> acts = {kernel("_Z11gemm_3xtf32PKfS0_Pfiii", 0)};
  profile::PrecisionReport r = profile::judgePrecision(acts, {"_Z11gemm_3xtf32PKfS0_Pfiii"}, strictFp32(), sass, "read");
  EXPECT_TRUE(r.ok());
  ASSERT_EQ(r.kernels.size(), 1u);
  EXPECT_EQ(r.kernels[0].cls, "tf32");
  EXPECT_EQ(r.kernels[0].source, "sass");
  EXPECT_EQ(r.kernels[0].sass, "HMMA.1684.F32.TF32");
  EXPECT_TRUE(r.kernels[0].reduced);
  EXPECT_EQ(r.candidate_class, "tf32");
  EXPECT_EQ(r.sass_status, "read");
}

TEST(JudgePrecision, FullPrecisionLibraryKernelIsClean) {
  profile::PrecisionReport r = profile::judgePrecision(
      {kernel("void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>(cutlass_80_simt_sgemm_256x128_8x4_nn_"
              "align1::Params)",
              0)},
      {}, strictFp32(), {}, "none");
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.candidate_class, "fp32");
}

TEST(JudgePrecision, PolicyFromTheContractJson) {
  Json c = {{"name", "paper"}, {"source", "task"}, {"atol", 0.01}, {"rtol", 0.01},
            {"reduced_precision_allowed", true}, {"task_float_dtype", "float32"}, {"note", nullptr}};
  profile::PrecisionPolicy p = profile::PrecisionPolicy::fromJson(c);
  EXPECT_EQ(p.contract, "paper");
  EXPECT_EQ(p.source, "task");
  EXPECT_EQ(p.atol, 0.01);
  EXPECT_TRUE(p.reduced_precision_allowed);
  EXPECT_EQ(p.task_float_dtype, "float32");
  EXPECT_EQ(p.note, "");
}

// Lines as cuobjdump 12.8 -sass prints them (sm_80 and sm_90 code of the
// same kernels: the classes merge).
const char* kSass = R"(
Fatbin elf code:
================
arch = sm_90
	code for sm_90
		Function : _Z5tf32kPKfS0_Pf
        /*0270*/                   HMMA.1684.F32.TF32 R12, R8.reuse, R14, RZ ;   /* 0x0000000e080c723c */
        /*0280*/              @!P0 HMMA.1684.F32.TF32 R8, R8, R0, RZ ;           /* 0x000000000808723c */
		Function : _Z3h16PK6__halfS1_Pf
        /*01a0*/                   HMMA.16816.F32 R20, R4.reuse, R16, RZ ;       /* 0x000000100414723c */
		Function : _Z3b16PK13__nv_bfloat16S1_Pf
        /*01a0*/                   HMMA.16816.F32.BF16 R20, R4.reuse, R16, RZ ;  /* 0x000000100414723c */
		Function : _Z3d64PKdS0_Pd
        /*0180*/                   DMMA.8x8x4 R4, R4, R6, RZ ;                   /* 0x000000060404723f */
		Function : _Z4f32kPKfPf
        /*0020*/                   HFMA2.MMA R5, -RZ, RZ, 0, 2.384185791015625e-07 ;  /* 0x00000004ff057435 */
        /*00a0*/                   FFMA R7, R0, R7, R9 ;                         /* 0x0000000700077223 */
		Function : _Z5hgmmaPKfPf
        /*0300*/                   HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], RZ, !UPT ;
        /*0310*/                   HGMMA.64x128x8.F32.TF32 R24, gdesc[UR8], R24 ;
arch = sm_80
	code for sm_80
		Function : _Z4f32kPKfPf
        /*0090*/                   FFMA R7, R0, R7, R6 ;                              /* 0x0000000700077223 */
)";

TEST(Sass, ClassesFromTensorCoreOpcodes) {
  std::istringstream in(kSass);
  auto k = profile::parseSass(in);
  ASSERT_EQ(k.size(), 6u);
  EXPECT_EQ(k["tf32k(float const*, float const*, float*)"].cls, "tf32");
  EXPECT_EQ(k["tf32k(float const*, float const*, float*)"].opcodes, (std::set<std::string>{"HMMA.1684.F32.TF32"}));
  EXPECT_EQ(k["h16(__half const*, __half const*, float*)"].cls, "fp16");
  EXPECT_EQ(k["b16(__nv_bfloat16 const*, __nv_bfloat16 const*, float*)"].cls, "bf16");
  EXPECT_EQ(k["d64(double const*, double const*, double*)"].cls, "fp64");
  // HFMA2.MMA moves a constant: not half-precision math.
  EXPECT_EQ(k["f32k(float const*, float*)"].cls, "fp32");
  EXPECT_TRUE(k["f32k(float const*, float*)"].opcodes.empty());
  EXPECT_EQ(k["hgmma(float const*, float*)"].cls, "bf16");
}

TEST(Sass, MissingToolIsAStatusNotAnError) {
  setenv("KB_CUOBJDUMP", "/nonexistent/cuobjdump", 1);
  profile::SassScan s = profile::readLibrarySass("/nonexistent/lib.so", 5);
  unsetenv("KB_CUOBJDUMP");
  EXPECT_TRUE(s.kernels.empty());
  EXPECT_NE(s.status, "read");
}

TEST(GpuPeak, TableByNameThenArchitecture) {
  auto h200 = profile::gpuPeak("NVIDIA H200", "sm_90");
  ASSERT_TRUE(h200);
  EXPECT_EQ(h200->tf32_tflops, 495);
  EXPECT_EQ(profile::gpuPeak("NVIDIA H100 80GB HBM3", "sm_90")->model, "H100/H200 SXM");
  EXPECT_EQ(profile::gpuPeak("NVIDIA H100 PCIe", "sm_90")->model, "H100 PCIe");
  EXPECT_EQ(profile::gpuPeak("NVIDIA H20", "sm_90")->model, "H20");
  EXPECT_EQ(profile::gpuPeak("NVIDIA A100-SXM4-80GB", "sm_80")->model, "A100");
  EXPECT_EQ(profile::gpuPeak("NVIDIA L40S", "sm_89")->model, "L40S");
  EXPECT_EQ(profile::gpuPeak("NVIDIA L4", "sm_89")->model, "L4");
  EXPECT_EQ(profile::gpuPeak("NVIDIA A10G", "sm_86")->model, "A10/A10G");
  // A name the table lacks: the architecture's highest peaks.
  EXPECT_EQ(profile::gpuPeak("NVIDIA Future Part", "sm_90")->tf32_tflops, 495);
  EXPECT_FALSE(profile::gpuPeak("Some Accelerator", "sm_42"));
  EXPECT_FALSE(profile::gpuPeak("", ""));
}

TEST(GpuPeak, ContractChoosesThePeak) {
  profile::GpuPeak h = *profile::gpuPeak("NVIDIA H200", "sm_90");
  // strict fp32: TF32 (495) is above 3xTF32's ~165 and fp16-split emulation.
  EXPECT_EQ(profile::floorPeakTflops(h, "strict", "float32"), 495);
  EXPECT_EQ(profile::floorPeakTflops(h, "strict", "float64"), 495);
  // paper, or a half-precision task: twice FP16, room for FP8.
  EXPECT_EQ(profile::floorPeakTflops(h, "paper", "float32"), 1980);
  EXPECT_EQ(profile::floorPeakTflops(h, "strict", "float16"), 1980);
  // A GPU without TF32 (V100): half the FP16 peak bounds emulated fp32.
  EXPECT_EQ(profile::floorPeakTflops(*profile::gpuPeak("Tesla V100-SXM2-32GB", "sm_70"), "strict", "float32"), 62.5);
  profile::FlopsPeakChoice unknown = profile::chooseFlopsPeak("Mystery GPU", "", "strict", "float32");
  EXPECT_EQ(unknown.peak_tflops, 0);
  EXPECT_NE(unknown.basis.find("no FLOPs floor"), std::string::npos);
  EXPECT_TRUE(unknown.toJson()["gpu_model"].is_null());
}

// The FLOPs floor as kbprof builds it (lib/profile/profile.cpp step 5:
// chooseFlopsPeak -> PlausibilityInput -> checkPlausibility), on a profile
// recorded on the H200 (testdata/prof/cublas_2048.json: matmul_2048, cuBLAS
// SGEMM) and the bundle's "flops" (testdata/tasks/matmul_2048/task.json).
TEST(FlopsFloor, RecordedH200ProfileAndAnAbsurdTiming) {
  const char* root = std::getenv("KB_SOURCE_ROOT");
  ASSERT_NE(root, nullptr) << "KB_SOURCE_ROOT is not set";
  Json rec = readJsonFile(std::string(root) + "/testdata/prof/cublas_2048.json");
  Json task = readJsonFile(std::string(root) + "/testdata/tasks/matmul_2048/task.json");
  profile::FlopsPeakChoice peak = profile::chooseFlopsPeak(rec["gpu"].get<std::string>(),
                                         rec["arch"].is_string() ? rec["arch"].get<std::string>() : "", "strict",
                                         "float32");
  profile::PlausibilityInput in;
  in.bandwidth_gbps = rec["bandwidth_gbps"];
  // The bytes behind the recorded bytes floor.
  in.input_bytes = static_cast<uint64_t>(rec["plausibility"]["bytes_floor_ms"].get<double>() * 1e-3 *
                                         in.bandwidth_gbps * 1e9 + 0.5);
  in.flops = task.value("flops", 0.0);
  ASSERT_EQ(in.flops, 2.0 * 2048 * 2048 * 2048);
  in.peak_tflops = peak.peak_tflops;
  in.peak_basis = peak.basis;
  const double candidate = rec["timings"]["candidate"]["median_ms"], eager = rec["timings"]["eager"]["median_ms"];
  profile::Plausibility honest = profile::checkPlausibility(in, candidate, eager);
  EXPECT_TRUE(honest.ok);
  EXPECT_NEAR(honest.flops_floor_ms, in.flops / 495e12 * 1e3, 1e-9);  // 0.0347 ms
  EXPECT_GT(honest.flops_floor_ms, honest.bytes_floor_ms);             // the binding floor now
  EXPECT_EQ(honest.floor_ms, honest.flops_floor_ms);
  EXPECT_NE(honest.flops_note.find("H100/H200 SXM"), std::string::npos) << honest.flops_note;
  // A 3xTF32 GEMM at a third of the TF32 peak stays above the floor.
  EXPECT_TRUE(profile::checkPlausibility(in, in.flops / (495e12 / 3) * 1e3, eager).ok);
  // A timer that reports 0.02 ms for 17 GFLOP is below 0.8 x the floor,
  // though above the bytes floor that was all kbprof had before.
  EXPECT_GT(0.02, 0.8 * honest.bytes_floor_ms);
  profile::Plausibility absurd = profile::checkPlausibility(in, 0.02, eager);
  EXPECT_FALSE(absurd.ok);
  EXPECT_NE(absurd.floorText().find("TFLOP/s"), std::string::npos) << absurd.floorText();
  EXPECT_EQ(absurd.toJson()["peak_tflops"], 495);
  // Without "flops" there is no FLOPs floor, and the report says why.
  in.flops = 0;
  profile::Plausibility none = profile::checkPlausibility(in, 0.02, eager);
  EXPECT_EQ(none.flops_floor_ms, 0);
  EXPECT_NE(none.flops_note.find("no FLOPs floor"), std::string::npos);
}

}  // namespace
}  // namespace kb
