// Status and StatusOr: error values for code that must not throw (hot paths,
// parsers of untrusted bytes) and for start-up errors that end in a one-line
// message to the user. A Status carries one human-readable line that names the
// cause and, where there is one, the fix.
#ifndef SLUICE_SHM_BASE_STATUS_H_
#define SLUICE_SHM_BASE_STATUS_H_

#include <optional>
#include <string>
#include <utility>

namespace sluice {

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  static Status Ok() { return Status(); }
  static Status Error(std::string message) {
    Status s;
    s.ok_ = false;
    s.message_ = std::move(message);
    return s;
  }
  bool ok() const { return ok_; }
  const std::string& message() const { return message_; }

 private:
  bool ok_ = true;
  std::string message_;
};

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  StatusOr(Status status) : status_(std::move(status)) {}  // NOLINT
  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() { return *value_; }
  const T& operator*() const { return *value_; }
  // The value, or `fallback` when this holds an error.
  T value_or(T fallback) const& { return value_ ? *value_ : std::move(fallback); }
  T value_or(T fallback) && { return value_ ? std::move(*value_) : std::move(fallback); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace sluice

#define SLUICE_RETURN_IF_ERROR(expr)        \
  do {                                      \
    ::sluice::Status status_macro_ = (expr); \
    if (!status_macro_.ok()) return status_macro_; \
  } while (0)

#define SLUICE_CONCAT_INNER_(a, b) a##b
#define SLUICE_CONCAT_(a, b) SLUICE_CONCAT_INNER_(a, b)
// SLUICE_ASSIGN_OR_RETURN(auto x, MakeX()); returns the error Status if any.
#define SLUICE_ASSIGN_OR_RETURN(lhs, expr)                                  \
  auto SLUICE_CONCAT_(statusor_, __LINE__) = (expr);                        \
  if (!SLUICE_CONCAT_(statusor_, __LINE__).ok())                            \
    return SLUICE_CONCAT_(statusor_, __LINE__).status();                    \
  lhs = std::move(SLUICE_CONCAT_(statusor_, __LINE__)).value()

#endif  // SLUICE_SHM_BASE_STATUS_H_
