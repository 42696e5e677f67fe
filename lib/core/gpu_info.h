// What the machine says about its NVIDIA driver, without touching CUDA.
#pragma once

#include <string>

namespace kb {

// Whether the machine has an NVIDIA driver's device node (/dev/nvidiactl).
bool hasNvidiaGpu();

// The kernel module's version from /proc/driver/nvidia/version (e.g.
// "580.159.04"); "" when there is no NVIDIA driver.
std::string nvidiaDriverVersion();

}  // namespace kb
