// The precision contract of a task (lib/task/precision.h): which contract,
// which tolerance, and how task.json's own fields change them.
#include "task/precision.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace {

kb::Json task(const std::string& float_dtype) {
  return kb::Json::parse(R"({
    "format_version": 1, "id": "t/p", "files": {"model.py": "", "reference.pt": ""},
    "torch_version": "2.11.0", "init": {"seed": 42, "args": []}, "capture": "script", "generator": "spec",
    "inputs": [{"kind": "tensor", "dtype": ")" + float_dtype + R"(", "shape": [4, 4], "distribution": "normal",
                "params": {"mean": 0.0, "std": 1.0}},
               {"kind": "tensor", "dtype": "int64", "shape": [4], "distribution": "randint",
                "params": {"low": 0, "high": 4}},
               {"kind": "float", "value": 2.0}],
    "outputs": [{"dtype": ")" + float_dtype + R"(", "shape": [4, 4]}],
    "state": []
  })");
}

kb::task::TaskInfo parse(const kb::Json& doc) { return kb::task::parseTaskInfo(doc, "task.json"); }

TEST(PrecisionContract, DefaultFollowsTheDtypes) {
  for (const char* d : {"float32", "float64"}) {
    kb::task::PrecisionContract c = kb::task::resolveContract(parse(task(d)));
    EXPECT_EQ(c.name, "strict") << d;
    EXPECT_EQ(c.source, "default");
    EXPECT_EQ(c.atol, 1e-4);
    EXPECT_EQ(c.rtol, 1e-4);
    EXPECT_FALSE(c.reduced_precision_allowed);
    EXPECT_EQ(c.task_float_dtype, d);
  }
  for (const char* d : {"float16", "bfloat16"}) {
    kb::task::PrecisionContract c = kb::task::resolveContract(parse(task(d)));
    EXPECT_EQ(c.name, "paper") << d;
    EXPECT_EQ(c.atol, 1e-2);
    EXPECT_TRUE(c.reduced_precision_allowed);
  }
  // A mixed task: the narrowest floating dtype decides.
  kb::Json mixed = task("float32");
  mixed["outputs"][0]["dtype"] = "bfloat16";
  EXPECT_EQ(kb::task::narrowestFloatDtype(parse(mixed)), "bfloat16");
  EXPECT_EQ(parse(mixed).precision, "paper");
  // No floating tensor at all: strict (nothing to reduce).
  kb::Json ints = task("int32");
  EXPECT_EQ(kb::task::narrowestFloatDtype(parse(ints)), "");
  EXPECT_EQ(parse(ints).precision, "strict");
}

TEST(PrecisionContract, TaskJsonNamesIt) {
  kb::Json d = task("float32");
  d["precision"] = "paper";
  kb::task::TaskInfo info = parse(d);
  EXPECT_EQ(info.precision_declared, "paper");
  EXPECT_EQ(info.precision, "paper");
  EXPECT_EQ(info.atol, 1e-2);
  EXPECT_EQ(kb::task::resolveContract(info).source, "task");
  d["precision"] = "fast";
  try {
    parse(d);
    ADD_FAILURE() << "no error for precision \"fast\"";
  } catch (const kb::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("\"precision\""), std::string::npos) << e.what();
  }
}

TEST(PrecisionContract, TaskToleranceOnlyTightens) {
  // The paper's 1e-2, written by every bundle made before the contract: not
  // a licence for 1e-2 in an fp32 task.
  kb::Json d = task("float32");
  d["tolerance"] = {{"atol", 1e-2}, {"rtol", 1e-2}};
  kb::task::TaskInfo info = parse(d);
  EXPECT_EQ(info.tolerance_atol, 1e-2);
  EXPECT_EQ(info.atol, 1e-4);
  EXPECT_EQ(info.rtol, 1e-4);
  kb::task::PrecisionContract c = kb::task::resolveContract(info);
  EXPECT_NE(c.note.find("looser"), std::string::npos) << c.note;
  // Tighter than the contract: used, field by field.
  d["tolerance"] = {{"atol", 1e-6}, {"rtol", 1e-3}};
  info = parse(d);
  EXPECT_EQ(info.atol, 1e-6);
  EXPECT_EQ(info.rtol, 1e-4);
  EXPECT_EQ(kb::task::resolveContract(info, "paper").rtol, 1e-3);
  // Nonsense is refused.
  d["tolerance"] = {{"atol", -1.0}, {"rtol", 0.0}};
  EXPECT_THROW(parse(d), kb::UsageError);
}

TEST(PrecisionContract, OverrideWins) {
  kb::task::TaskInfo info = parse(task("float32"));
  kb::task::PrecisionContract c = kb::task::resolveContract(info, std::string("paper"));
  EXPECT_EQ(c.name, "paper");
  EXPECT_EQ(c.source, "override");
  EXPECT_EQ(c.atol, 1e-2);
  EXPECT_TRUE(c.reduced_precision_allowed);
  EXPECT_EQ(kb::task::resolveContract(parse(task("float16")), std::string("strict")).atol, 1e-4);
  EXPECT_THROW(kb::task::resolveContract(info, std::string("loose")), kb::UsageError);
  kb::Json j = c.toJson();
  EXPECT_EQ(j["name"], "paper");
  EXPECT_EQ(j["source"], "override");
  EXPECT_EQ(j["task_float_dtype"], "float32");
  EXPECT_TRUE(j["note"].is_null());
}

}  // namespace
