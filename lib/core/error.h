// The error type of the libraries: a message that already carries its context
// (which file, which task, which stage), so a tool can print it as one line.
#pragma once

#include <stdexcept>
#include <string>

namespace kb {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bad input from the user (missing file, malformed argument): tools exit 2.
class UsageError : public Error {
 public:
  using Error::Error;
};

}  // namespace kb
