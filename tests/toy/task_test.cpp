// The toy family's tasks and the evaluator that scores their answers.
#include <gtest/gtest.h>

#include "toy/task.h"

using namespace kb;
using namespace kb::toy;

TEST(ToyTask, ScoresAnswers) {
  const ToyTask t = makeToyTask(7);
  EXPECT_EQ(scoreToyAnswer(t, toyDemonstration(t)).reward, 1);
  EXPECT_EQ(scoreToyAnswer(t, "y[i] = x[i] * 1234.0f;").reason, "wrong_value");
  EXPECT_EQ(scoreToyAnswer(t, "nothing").reason, "no_kernel_line");
  EXPECT_EQ(scoreToyAnswer(t, "y[i] = x[i] +;").reason.rfind("parse_error", 0), 0u);
  EXPECT_NEAR(*evalCExpression("fmaxf(-(x[i]) * 3.0f, 0.0f) + 2.0f", 1.0), 2.0, 1e-12);
  EXPECT_NEAR(*evalCExpression("fmaxf(-(x[i]) * 3.0f, 0.0f) + 2.0f", -1.0), 5.0, 1e-12);
}
