// Attribute values attached to ops: numbers, booleans, strings, dtypes, lists, and dense tensors (constants).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "ir/tensor.h"
#include "ir/types.h"

namespace kiln {

enum class AttrKind { Int, Float, Bool, String, DType, List, Dense };

std::string_view attrKindName(AttrKind k);

class Attr {
 public:
  using List = std::vector<Attr>;
  using DensePtr = std::shared_ptr<const Tensor>;

  Attr() : v_(int64_t{0}) {}
  Attr(int64_t v) : v_(v) {}                     // NOLINT: implicit, attributes read like literals.
  Attr(int v) : v_(int64_t{v}) {}                // NOLINT
  Attr(double v) : v_(v) {}                      // NOLINT
  Attr(bool v) : v_(v) {}                        // NOLINT
  Attr(std::string v) : v_(std::move(v)) {}      // NOLINT
  Attr(const char* v) : v_(std::string(v)) {}   // NOLINT
  Attr(DType v) : v_(v) {}                       // NOLINT
  Attr(List v) : v_(std::move(v)) {}             // NOLINT
  Attr(Tensor v) : v_(std::make_shared<const Tensor>(std::move(v))) {}  // NOLINT
  static Attr ints(const std::vector<int64_t>& v);

  AttrKind kind() const { return static_cast<AttrKind>(v_.index()); }
  bool isInt() const { return kind() == AttrKind::Int; }
  bool isFloat() const { return kind() == AttrKind::Float; }
  bool isNumber() const { return isInt() || isFloat(); }

  int64_t getInt() const { return std::get<int64_t>(v_); }
  // An Int or a Float as double.
  double getNumber() const { return isInt() ? static_cast<double>(getInt()) : std::get<double>(v_); }
  bool getBool() const { return std::get<bool>(v_); }
  const std::string& getString() const { return std::get<std::string>(v_); }
  DType getDType() const { return std::get<DType>(v_); }
  const List& getList() const { return std::get<List>(v_); }
  const Tensor& getDense() const { return *std::get<DensePtr>(v_); }
  // A list whose elements are all Int, as int64s; nullopt otherwise.
  std::optional<std::vector<int64_t>> getIntList() const;

  // The text format's spelling: 3, 1.5, true, "tanh", f32, [1, 2]. Dense tensors print as nested lists.
  std::string str() const;
  bool operator==(const Attr& o) const;

 private:
  std::variant<int64_t, double, bool, std::string, DType, List, DensePtr> v_;
};

// Shortest text that reads back to the same double, always with a '.', an exponent, or inf/nan,
// so a float never looks like an integer: 1.0, 0.1, 1e-05, -inf, nan.
std::string formatFloat(double v);
// Same for a value stored in a narrower float type (shortest repr of the float, not of the double).
std::string formatFloatAs(double v, DType t);

// A constant's literal: a scalar if every element is equal (a splat), else nested lists by shape.
std::string formatDense(const Tensor& t);

}  // namespace kiln
