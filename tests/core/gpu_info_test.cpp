// gpuFault (core/gpu_info.h) against nvidia-smi's answers for a lost GPU,
// one with a memory fault pending a reset, a healthy one, and none at all;
// gpuMemoryMiB against a number and against no answer.
// A real GPU loss cannot be made on purpose: $KB_NVIDIA_SMI points at a
// script that answers as nvidia-smi does (the texts are nvidia-smi's own).
#include "core/gpu_info.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;

namespace {

class GpuFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kb_gpu_fault_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    ::unsetenv("KB_NVIDIA_SMI");
    fs::remove_all(dir_);
  }
  // An nvidia-smi that prints `text` and exits `code`.
  void answer(const std::string& text, int code) {
    fs::path smi = dir_ / "nvidia-smi";
    std::ofstream(smi) << "#!/bin/sh\nprintf '%s\\n' '" << text << "'\nexit " << code << "\n";
    fs::permissions(smi, fs::perms::owner_all);
    ::setenv("KB_NVIDIA_SMI", smi.c_str(), 1);
  }
  fs::path dir_;
};

TEST_F(GpuFaultTest, LostGpuIsAFault) {
  answer("Unable to determine the device handle for GPU0000:19:00.0: GPU is lost.  Reboot the system to recover this GPU", 15);
  std::string fault = kb::gpuFault(0);
  EXPECT_NE(fault.find("GPU is lost"), std::string::npos) << fault;
  EXPECT_NE(fault.find("exit 15"), std::string::npos) << fault;
}

TEST_F(GpuFaultTest, PendingRowRemapIsAFault) {
  answer("00000000:19:00.0, Yes, [N/A]", 0);
  EXPECT_NE(kb::gpuFault(0).find("row remapping pending"), std::string::npos);
  answer("00000000:19:00.0, [N/A], Yes", 0);
  EXPECT_NE(kb::gpuFault(0).find("page retirement pending"), std::string::npos);
}

TEST_F(GpuFaultTest, HealthyOrUnknownIsNone) {
  answer("00000000:19:00.0, No, [N/A]", 0);
  EXPECT_EQ(kb::gpuFault(0), "");
  ::setenv("KB_NVIDIA_SMI", (dir_ / "no-such-nvidia-smi").c_str(), 1);
  EXPECT_EQ(kb::gpuFault(0), "");  // no nvidia-smi: no evidence of a fault
}

TEST_F(GpuFaultTest, MemoryIsReadOrUnknown) {
  answer("81559", 0);
  EXPECT_EQ(kb::gpuMemoryMiB(0), 81559);
  answer("[N/A]", 0);
  EXPECT_EQ(kb::gpuMemoryMiB(0), std::nullopt);
  answer("No devices were found", 6);
  EXPECT_EQ(kb::gpuMemoryMiB(0), std::nullopt);
}

}  // namespace
