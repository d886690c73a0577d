// Errors as values: a Status or an Expected<T> carries a message and, for user errors, a source
// location. Part of kiln's public API (docs/api.md): nothing in it throws.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace kiln {

// Where something came from: a line and column of a .kiln file, or a node of a file that has no
// lines (an ONNX model: file "model.onnx", node "node 3 'relu_1' (Relu)"). Neither means "no
// location" (built in C++).
struct SourceLoc {
  SourceLoc() = default;
  SourceLoc(std::string file, int line, int col, std::string node = {})
      : file(std::move(file)), line(line), col(col), node(std::move(node)) {}

  std::string file;
  int line = 0;
  int col = 0;
  std::string node;

  bool known() const { return line > 0 || !node.empty(); }
  // "mlp.kiln:6:9" or "model.onnx: node 3 'relu_1' (Relu)"; "" when not known.
  std::string str() const;
};

// A user-facing error: "file:line:col: error: message", or "error: message" without a location.
class Error {
 public:
  Error() = default;
  explicit Error(std::string message, SourceLoc loc = {}) : message_(std::move(message)), loc_(std::move(loc)) {}

  const std::string& message() const { return message_; }
  const SourceLoc& loc() const { return loc_; }
  // Attaches a location to an error that has none yet (an inner layer knew what, the outer knows where).
  Error at(const SourceLoc& loc) const& {
    Error e = *this;
    if (!e.loc_.known()) e.loc_ = loc;
    return e;
  }
  std::string str() const;

 private:
  std::string message_;
  SourceLoc loc_;
};

// Success, or an Error.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error e) : error_(std::move(e)), ok_(false) {}  // NOLINT: implicit on purpose, `return Error(...)`.

  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const {
    assert(!ok_);
    return error_;
  }

 private:
  Error error_;
  bool ok_ = true;
};

// A value or an Error (std::expected arrives in C++23; this is the small part of it kiln needs).
template <class T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}  // NOLINT: implicit on purpose.
  Expected(Error e) : v_(std::move(e)) {}      // NOLINT
  Expected(Status s) : v_(s.error()) {}        // NOLINT: only from a failed Status.

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& operator*() & {
    assert(ok());
    return std::get<0>(v_);
  }
  const T& operator*() const& {
    assert(ok());
    return std::get<0>(v_);
  }
  T&& operator*() && {
    assert(ok());
    return std::get<0>(std::move(v_));
  }
  T* operator->() { return &**this; }
  const T* operator->() const { return &**this; }
  const Error& error() const {
    assert(!ok());
    return std::get<1>(v_);
  }
  Status status() const { return ok() ? Status() : Status(error()); }

 private:
  std::variant<T, Error> v_;
};

}  // namespace kiln
