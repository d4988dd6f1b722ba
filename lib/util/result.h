/// One error model for all of lib/: every fallible function returns a Result<T>
/// carrying either a value or an Error (errno plus a human context such as the
/// path, the device or the peer). Only the programs turn an Error into a
/// message and an exit code.
#pragma once

#include <cerrno>
#include <string>
#include <utility>
#include <variant>

namespace rcp {

/// What failed: an errno value (0 when the cause is not a system error, e.g. a
/// protocol violation, which uses EPROTO) and a sentence naming the object.
struct Error {
  int code = 0;
  std::string context;

  /// "context: strerror(code)" — the form the programs print.
  std::string message() const;
};

/// Builds an Error from errno as it is now (call right after the failing syscall).
Error sys_error(std::string context);
/// Builds an Error from an explicit errno value (e.g. a negative io_uring res).
Error make_error(int code, std::string context);

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}
  Result(Error e) : v_(std::move(e)) {}

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const T& value() const& { return std::get<0>(v_); }
  T& operator*() & { return value(); }
  T* operator->() { return &value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error e) : err_(std::move(e)), failed_(true) {}
  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const Error& error() const { return err_; }

 private:
  Error err_;
  bool failed_ = false;
};

using Status = Result<void>;

/// Propagates an error out of the current function: RCP_TRY(expr);
#define RCP_TRY(expr)                               \
  do {                                              \
    auto rcp_try_r_ = (expr);                       \
    if (!rcp_try_r_.ok()) return rcp_try_r_.error(); \
  } while (0)

/// Assigns the value of a Result or returns its error: RCP_ASSIGN(auto x, f());
#define RCP_CONCAT_(a, b) a##b
#define RCP_CONCAT(a, b) RCP_CONCAT_(a, b)
#define RCP_ASSIGN(decl, expr)                                        \
  auto RCP_CONCAT(rcp_r_, __LINE__) = (expr);                          \
  if (!RCP_CONCAT(rcp_r_, __LINE__).ok()) return RCP_CONCAT(rcp_r_, __LINE__).error(); \
  decl = std::move(RCP_CONCAT(rcp_r_, __LINE__)).value()

}  // namespace rcp
