// The message of the kb::UsageError that fn throws; a test failure, and "",
// when it throws none.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "core/error.h"

inline std::string expectUsageError(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const kb::UsageError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no kb::UsageError";
  return "";
}
