#pragma once
float helper_defined_in_kernels(float x);
