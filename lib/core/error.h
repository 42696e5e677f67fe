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

// A request to a service (an HTTP endpoint, a policy) that failed; whether
// asking again later might help, and the HTTP status when there was one.
class ServiceError : public Error {
 public:
  ServiceError(const std::string& what, bool retryable, int http_status = 0)
      : Error(what), retryable_(retryable), http_status_(http_status) {}
  bool retryable() const { return retryable_; }
  int httpStatus() const { return http_status_; }

 private:
  bool retryable_;
  int http_status_;
};

}  // namespace kb
