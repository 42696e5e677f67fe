#pragma once
// Lives outside every test case: including it from a solution is refused.
inline int outside_value() { return 42; }
