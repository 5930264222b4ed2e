// SPDX-License-Identifier: Apache-2.0
// The one error model of perf-monitor: functions that can fail return Result<T>, a value or an
// Error with a named code. Library code does not throw; third-party exceptions (toml++, CLI11) are
// caught at the boundary that calls them and turned into an Error.
#pragma once

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>
#include <variant>

namespace pm {

enum class Errc {
  kInvalidArgument,   // bad user input: flag, config key, value (exit 2)
  kNotFound,          // ENOENT/ESRCH: a file, process or symbol that is not there
  kPermissionDenied,  // EACCES/EPERM
  kUnavailable,       // the host lacks a feature (EOPNOTSUPP, ENOSYS, no such PMU)
  kParse,             // a kernel file whose format we did not understand
  kIo,                // any other errno
};

struct Error {
  Errc code = Errc::kIo;
  std::string message;

  static Error from_errno(int err, std::string context) {
    Errc code = Errc::kIo;
    switch (err) {
      case ENOENT:
      case ESRCH:
        code = Errc::kNotFound;
        break;
      case EACCES:
      case EPERM:
        code = Errc::kPermissionDenied;
        break;
      case EOPNOTSUPP:
      case ENOSYS:
      case ENODEV:
        code = Errc::kUnavailable;
        break;
      case EINVAL:
        code = Errc::kInvalidArgument;
        break;
      default:
        break;
    }
    return Error{code, std::move(context) + ": " + std::strerror(err)};
  }
};

inline Error make_error(Errc code, std::string message) { return Error{code, std::move(message)}; }

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  [[nodiscard]] bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  [[nodiscard]] const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT(google-explicit-constructor)

  [[nodiscard]] bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  [[nodiscard]] const Error& error() const { return error_; }

 private:
  Error error_;
  bool ok_ = true;
};

using Status = Result<void>;

// Returns the error of a Result-returning expression from the calling function.
#define PM_TRY(expr)               \
  do {                             \
    if (auto st_ = (expr); !st_) { \
      return st_.error();          \
    }                              \
  } while (0)

}  // namespace pm
