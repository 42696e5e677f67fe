// What the machine says about its NVIDIA driver, without touching CUDA.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace kb {

// Whether the machine has an NVIDIA driver's device node (/dev/nvidiactl).
bool hasNvidiaGpu();

// Asked before any work by every tool given a CUDA device: throws kb::Error
// "WHAT asked for, but this machine has no NVIDIA GPU" when there is none:
// an infrastructure fault, exit 3 (docs/cli.md), the same in every tool.
void requireNvidiaGpu(const std::string& what);

// The kernel module's version from /proc/driver/nvidia/version (e.g.
// "580.159.04"); "" when there is no NVIDIA driver.
std::string nvidiaDriverVersion();

// Whether GPU `index` still answers its driver, asked of nvidia-smi in a
// fresh process: "" when it does (or when nvidia-smi is absent: no evidence),
// else why not, in one line (nvidia-smi cannot reach it: "GPU is lost",
// fallen off the bus; or it has an uncorrectable memory error waiting for a
// reset: row remapping or page retirement pending). Asked after a candidate
// failed on the GPU, so that a device fault becomes infra_error, never the
// candidate's reward. $KB_NVIDIA_SMI names another nvidia-smi (fault
// injection in tests: a real GPU loss cannot be made on purpose).
std::string gpuFault(int index);

// GPU `index`'s compute capability as nvcc names it ("sm_90"); "" when
// nvidia-smi cannot say.
std::string gpuComputeCapability(int index);

// GPU `index`'s product name as nvidia-smi says it ("NVIDIA H200"); ""
// when nvidia-smi cannot say. kbprof's own reading of the GPU it judges
// with (the peak FLOPs table is by name).
std::string gpuName(int index);

// GPU `index`'s memory in MiB as nvidia-smi says it (81559 on an H100 80GB);
// nullopt when nvidia-smi cannot say.
std::optional<long> gpuMemoryMiB(int index);

// The processes with a compute context on GPU `index`; nullopt when
// nvidia-smi cannot say.
std::optional<std::vector<long>> gpuComputePids(int index);

// nvidia-smi and the other queries above share one runner: $KB_NVIDIA_SMI or
// nvidia-smi on PATH, no shell, killed after 30 s (a lost GPU can hang it).

}  // namespace kb
