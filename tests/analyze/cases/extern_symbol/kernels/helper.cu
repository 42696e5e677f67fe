#include "helper.cuh"
float helper_defined_in_kernels(float x) { return 2.0f * x; }
