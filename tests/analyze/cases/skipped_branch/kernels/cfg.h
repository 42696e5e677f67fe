// The condition lives in a header of the solution.
#pragma once
#define TILE 64
#if defined(__GNUC__) && __GNUC__ >= 5  // expect: [skipped-branch]
#define HACK_FROM_HEADER 1
#endif
