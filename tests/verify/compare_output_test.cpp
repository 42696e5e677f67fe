// The reference worker's element-wise comparison (verify/compare_output.h):
// the tolerance where the reference is finite, exact matches where it is
// +inf, -inf or NaN.
#include "verify/compare_output.h"
#include "verify/poison.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>

namespace kb {
namespace {

const float kInf = INFINITY;

// Compares `cand` with `ref` (both float32, same shape) at atol = rtol =
// 1e-4; `oc` keeps what the comparison found.
bool compare(const std::vector<float>& cand, const std::vector<float>& ref, verify::OutputCheck& oc,
             double tol = 1e-4) {
  at::Tensor c = at::tensor(cand), r = at::tensor(ref);
  oc.dtype = oc.expected_dtype = "float32";
  oc.shape = oc.expected_shape = {static_cast<int64_t>(ref.size())};
  return verify::compareOutput(c, r, tol, tol, oc);
}

TEST(CompareOutput, FiniteWithinTheTolerance) {
  verify::OutputCheck oc;
  EXPECT_TRUE(compare({1.0f, 2.00015f, -3.0f}, {1.0f, 2.0f, -3.0f}, oc));
  EXPECT_EQ(oc.mismatches, 0u);
  EXPECT_TRUE(oc.problem.empty());
  verify::OutputCheck bad;
  EXPECT_FALSE(compare({1.0f, 2.001f, -3.0f}, {1.0f, 2.0f, -3.0f}, bad));
  EXPECT_EQ(bad.mismatches, 1u);
  EXPECT_EQ(bad.worst_index, (std::vector<int64_t>{1}));
  EXPECT_NE(bad.problem.find("differ by more than"), std::string::npos) << bad.problem;
}

TEST(CompareOutput, NonFiniteReferencesMatchOnlyThemselves) {
  const std::vector<float> ref = {kInf, -kInf, NAN, 0.5f};
  verify::OutputCheck same;
  EXPECT_TRUE(compare({kInf, -kInf, NAN, 0.5f}, ref, same)) << same.problem;
  EXPECT_EQ(same.mismatches, 0u);
  // Each of these passed before: the tolerance atol + rtol*|inf| is
  // infinite, and only non-finite values where the reference is finite
  // were counted.
  struct Case {
    const char* what;
    std::vector<float> cand;
    int64_t at;
  };
  const Case cases[] = {
      {"a finite value where the reference is +inf", {0.0f, -kInf, NAN, 0.5f}, 0},
      {"a huge finite value where the reference is +inf", {3e38f, -kInf, NAN, 0.5f}, 0},
      {"-inf where the reference is +inf", {-kInf, -kInf, NAN, 0.5f}, 0},
      {"+inf where the reference is -inf", {kInf, kInf, NAN, 0.5f}, 1},
      {"a finite value where the reference is -inf", {kInf, -1e30f, NAN, 0.5f}, 1},
      {"a finite value where the reference is NaN", {kInf, -kInf, 0.0f, 0.5f}, 2},
      {"+inf where the reference is NaN", {kInf, -kInf, kInf, 0.5f}, 2},
  };
  for (const auto& c : cases) {
    verify::OutputCheck oc;
    EXPECT_FALSE(compare(c.cand, ref, oc)) << c.what;
    EXPECT_EQ(oc.mismatches, 1u) << c.what;
    EXPECT_EQ(oc.worst_index, (std::vector<int64_t>{c.at})) << c.what;
    EXPECT_NE(oc.problem.find("Inf/NaN"), std::string::npos) << c.what << ": " << oc.problem;
  }
  // Even under the paper's 1e-2 and with every finite value right.
  verify::OutputCheck loose;
  EXPECT_FALSE(compare({1.0f, -kInf, NAN, 0.5f}, ref, loose, 1e-2));
}

TEST(CompareOutput, NonFiniteCandidateWhereTheReferenceIsFinite) {
  verify::OutputCheck oc;
  EXPECT_FALSE(compare({1.0f, kInf, 3.0f}, {1.0f, 2.0f, 3.0f}, oc));
  EXPECT_EQ(oc.nonfinite_unexpected, 1u);
  EXPECT_NE(oc.problem.find("where the reference is finite"), std::string::npos) << oc.problem;
  verify::OutputCheck never;
  EXPECT_FALSE(compare({NAN, NAN, NAN}, {1.0f, kInf, NAN}, never));
  EXPECT_NE(never.problem.find("never written"), std::string::npos) << never.problem;
}

TEST(CompareOutput, MaxErrorsCountFiniteElementsOnly) {
  verify::OutputCheck oc;
  EXPECT_TRUE(compare({kInf, 1.00005f}, {kInf, 1.0f}, oc));
  EXPECT_NEAR(oc.max_abs_error, 5e-5, 1e-6);
  EXPECT_TRUE(std::isfinite(oc.max_rel_error));
}

// A gigabyte output is compared in pieces: every figure, the worst element
// and the message are those of the comparison in one piece, whatever the
// piece size (1 element, 3, 7 over 10 elements, or all at once).
TEST(CompareOutput, PiecesGiveTheSameVerdict) {
  const std::vector<float> ref = {1.0f, 2.0f, kInf, 4.0f, NAN, -6.0f, 7.0f, 8.0f, 9.0f, 8.0f};
  const std::vector<std::vector<float>> cands = {
      {1.0f, 2.00001f, kInf, 4.0f, NAN, -6.0f, 7.0f, 8.0f, 9.0f, 8.00001f},   // right
      {1.0f, 2.1f, kInf, 4.0f, NAN, -6.0f, 7.0f, 8.5f, 9.0f, 8.5f},          // three wrong, the two 8.5s tie
      {1.0f, 2.0f, kInf, 4.0f, NAN, kInf, 7.0f, 8.0f, 9.3f, 8.0f},           // Inf where finite
      {1.0f, 2.0f, 3.0f, 4.0f, 0.0f, -6.0f, 7.0f, 8.0f, 9.0f, 8.0f},         // two missed non-finite
      {NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN},                    // never written
  };
  const at::Tensor r = at::tensor(ref).reshape({2, 5});
  for (std::size_t k = 0; k < cands.size(); ++k) {
    const at::Tensor c = at::tensor(cands[k]).reshape({2, 5});
    auto run = [&](int64_t chunk) {
      verify::OutputCheck oc;
      oc.dtype = oc.expected_dtype = "float32";
      oc.shape = oc.expected_shape = {2, 5};
      oc.index = 0;
      bool ok = verify::compareOutput(c, r, 1e-4, 1e-4, oc, chunk);
      return std::make_pair(ok, oc);
    };
    const auto [whole_ok, whole] = run(verify::kCompareChunkElements);
    EXPECT_EQ(whole_ok, k == 0) << "case " << k << ": " << whole.problem;
    for (int64_t chunk : {1, 3, 7}) {
      const auto [ok, oc] = run(chunk);
      EXPECT_EQ(ok, whole_ok) << "case " << k << ", chunk " << chunk;
      EXPECT_EQ(oc.mismatches, whole.mismatches) << "case " << k << ", chunk " << chunk;
      EXPECT_EQ(oc.nonfinite_unexpected, whole.nonfinite_unexpected) << "case " << k << ", chunk " << chunk;
      EXPECT_DOUBLE_EQ(oc.max_abs_error, whole.max_abs_error) << "case " << k << ", chunk " << chunk;
      EXPECT_DOUBLE_EQ(oc.max_rel_error, whole.max_rel_error) << "case " << k << ", chunk " << chunk;
      EXPECT_EQ(oc.worst_index, whole.worst_index) << "case " << k << ", chunk " << chunk;
      EXPECT_EQ(oc.problem, whole.problem) << "case " << k << ", chunk " << chunk;
    }
  }
  // The cases say what they should, in one piece.
  auto problem = [&](std::size_t k) {
    verify::OutputCheck oc;
    oc.dtype = oc.expected_dtype = "float32";
    oc.shape = oc.expected_shape = {2, 5};
    verify::compareOutput(at::tensor(cands[k]).reshape({2, 5}), r, 1e-4, 1e-4, oc, 3);
    return oc;
  };
  verify::OutputCheck tie = problem(1);
  EXPECT_EQ(tie.mismatches, 3u);
  EXPECT_EQ(tie.worst_index, (std::vector<int64_t>{1, 2}));  // the two 8.5s for 8 tie: the first
  EXPECT_EQ(problem(2).nonfinite_unexpected, 1u);
  EXPECT_EQ(problem(3).worst_index, (std::vector<int64_t>{0, 2}));
  EXPECT_NE(problem(3).problem.find("Inf/NaN"), std::string::npos);
  EXPECT_NE(problem(4).problem.find("never written"), std::string::npos);
}

// Issue 35, class 3: the harness's fill. An element still holding it was
// never written, and is wrong whatever the reference holds there, a NaN
// included; canonical NaNs (what arithmetic makes) are not mistaken for it.
TEST(Poison, FillsAreNeverArithmeticsAndAreToldApart) {
  for (at::ScalarType t : {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16}) {
    SCOPED_TRACE(std::string(c10::toString(t)));
    for (uint64_t salt : {uint64_t{1}, uint64_t{0x123456789abcdefull}, ~uint64_t{0} >> 1}) {
      at::Tensor x = at::empty({64}, at::TensorOptions().dtype(t));
      verify::poisonFill(x, salt);  // top bit clear: the NaN fill
      EXPECT_TRUE(verify::unwrittenMask(x).all().item<bool>());
    }
    // The finite fill (top bit set): huge, finite, never within a tolerance.
    at::Tensor y = at::empty({64}, at::TensorOptions().dtype(t));
    verify::poisonFill(y, (uint64_t{1} << 63) | 0x5555);
    EXPECT_TRUE(at::isfinite(y).all().item<bool>());
    EXPECT_GT(y.to(at::kDouble).abs().min().item<double>(), 4000.0);
    // What arithmetic makes: canonical NaNs (0 / 0 on the CPU, and the
    // all-ones payload NVIDIA GPUs make), never taken for the fill.
    at::Tensor z = at::zeros({4}, at::TensorOptions().dtype(t));
    at::Tensor nan = z / z;
    EXPECT_TRUE(at::isnan(nan).all().item<bool>());
    EXPECT_FALSE(verify::unwrittenMask(nan).any().item<bool>());
    // NVIDIA's canonical NaN: every payload bit set.
    auto [mask, itype] = verify::nanPayloadField(t);
    at::Tensor all_ones = at::empty({4}, at::TensorOptions().dtype(t));
    const int64_t bits = t == at::kFloat ? int64_t{0x7FFFFFFF} : t == at::kDouble ? int64_t{0x7FFFFFFFFFFFFFFF} : int64_t{0x7FFF};
    all_ones.view(itype).fill_(bits);
    EXPECT_TRUE(at::isnan(all_ones).all().item<bool>());
    EXPECT_EQ(all_ones.view(itype).bitwise_and(mask).eq(mask).all().item<bool>(), true);
    EXPECT_FALSE(verify::unwrittenMask(all_ones).any().item<bool>());
  }
  at::Tensor ints = at::empty({8}, at::TensorOptions().dtype(at::kInt));
  verify::poisonFill(ints, 7);
  EXPECT_FALSE(verify::unwrittenMask(ints).any().item<bool>());
}

TEST(CompareOutput, AnUnwrittenElementIsWrongEvenWhereTheReferenceIsNaN) {
  at::Tensor ref = at::tensor(std::vector<float>{NAN, 1.0f, NAN, 2.0f});
  at::Tensor cand = at::empty({4});
  verify::poisonFill(cand, 42);  // the harness's NaN fill
  cand[1] = 1.0f;
  cand[3] = 2.0f;  // the solution skipped the stores where the answer is NaN
  verify::OutputCheck oc;
  oc.dtype = oc.expected_dtype = "float32";
  oc.shape = oc.expected_shape = {4};
  EXPECT_FALSE(verify::compareOutput(cand, ref, 1e-4, 1e-4, oc));
  EXPECT_EQ(oc.mismatches, 2u);
  EXPECT_NE(oc.problem.find("never wrote"), std::string::npos) << oc.problem;
  // The same with NaNs the solution computed: right.
  at::Tensor computed = at::tensor(std::vector<float>{0.0f, 1.0f, 0.0f, 2.0f});
  computed[0] = computed[0] / computed[0];
  computed[2] = computed[2] / computed[2];
  verify::OutputCheck ok;
  ok.dtype = ok.expected_dtype = "float32";
  ok.shape = ok.expected_shape = {4};
  EXPECT_TRUE(verify::compareOutput(computed, ref, 1e-4, 1e-4, ok)) << ok.problem;
}

}  // namespace
}  // namespace kb
