#pragma once
#ifndef assert
#define assert(e) ((void)(e))
#endif
