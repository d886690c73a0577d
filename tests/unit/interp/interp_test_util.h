// Helpers for the interpreter tests: literal tensors, one-op graphs and value comparisons.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "ir/builder.h"
#include "ir/interp/interpreter.h"

namespace kiln::test {

// A tensor of `type` holding `values` in row-major order (stored with setDouble: rounded to the dtype).
inline Tensor tensor(TensorType type, const std::vector<double>& values) {
  Tensor t(std::move(type));
  EXPECT_EQ(static_cast<int64_t>(values.size()), t.numElements()) << "literal for " << t.type().str();
  for (size_t i = 0; i < values.size() && static_cast<int64_t>(i) < t.numElements(); ++i)
    t.setDouble(static_cast<int64_t>(i), values[i]);
  return t;
}
inline Tensor f32(Shape shape, const std::vector<double>& values) { return tensor({DType::F32, std::move(shape)}, values); }
inline Tensor f64(Shape shape, const std::vector<double>& values) { return tensor({DType::F64, std::move(shape)}, values); }
// Integers and bools exactly (setInt), for values beyond 2^53.
inline Tensor ints(DType dtype, Shape shape, const std::vector<int64_t>& values) {
  Tensor t(TensorType{dtype, std::move(shape)});
  EXPECT_EQ(static_cast<int64_t>(values.size()), t.numElements()) << "literal for " << t.type().str();
  for (size_t i = 0; i < values.size() && static_cast<int64_t>(i) < t.numElements(); ++i)
    t.setInt(static_cast<int64_t>(i), values[i]);
  return t;
}
inline Tensor bools(Shape shape, const std::vector<int64_t>& values) { return ints(DType::Bool, std::move(shape), values); }

inline std::vector<double> doubles(const Tensor& t) {
  std::vector<double> out;
  for (int64_t i = 0; i < t.numElements(); ++i) out.push_back(t.getDouble(i));
  return out;
}
inline std::vector<int64_t> intValues(const Tensor& t) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < t.numElements(); ++i) out.push_back(t.getInt(i));
  return out;
}

// Runs `function` and expects success; an error fails the test and returns no tensors.
inline std::vector<Tensor> runOk(const Function& function, const std::vector<Tensor>& inputs,
                                 const InterpretOptions& options = {}) {
  auto r = interpret(function, inputs, options);
  if (!r) {
    ADD_FAILURE() << "interpret failed: " << r.error().str();
    return {};
  }
  return *r;
}

// @main(params of the inputs' types) applying one op to all params.
struct OneOp {
  Module module;
  Function* function = nullptr;

  OneOp(OpKind kind, const std::vector<TensorType>& types, AttrList attrs = {}) {
    GraphBuilder b(module, "main");
    std::vector<Value*> params;
    for (size_t i = 0; i < types.size(); ++i) params.push_back(b.param(types[i], "p" + std::to_string(i)));
    auto f = b.finish({b.op(kind, params, std::move(attrs))});
    if (!f) ADD_FAILURE() << "building " << opInfo(kind).name << " failed: " << f.error().str();
    else function = *f;
  }
};

inline std::vector<TensorType> typesOf(const std::vector<Tensor>& ts) {
  std::vector<TensorType> out;
  for (const Tensor& t : ts) out.push_back(t.type());
  return out;
}

// The single result of one op applied to `inputs` (an empty tensor after a reported failure).
inline Tensor run1(OpKind kind, const std::vector<Tensor>& inputs, AttrList attrs = {}) {
  OneOp g(kind, typesOf(inputs), std::move(attrs));
  if (!g.function) return Tensor();
  auto r = runOk(*g.function, inputs);
  return r.empty() ? Tensor() : r[0];
}

// The error message (Error::str()) of one op applied to `inputs`; "" if it succeeded.
inline std::string run1Error(OpKind kind, const std::vector<Tensor>& inputs, AttrList attrs = {}) {
  OneOp g(kind, typesOf(inputs), std::move(attrs));
  if (!g.function) return "<build failed>";
  auto r = interpret(*g.function, inputs);
  return r ? "" : r.error().str();
}

inline std::string num(double v) {
  std::ostringstream os;
  os.precision(10);
  os << v;
  return os.str();
}

// Exact equality of values (NaN equals NaN; -0 equals 0).
inline ::testing::AssertionResult sameValues(const Tensor& t, const std::vector<double>& want) {
  std::vector<double> got = doubles(t);
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "got " << got.size() << " elements, want " << want.size();
  for (size_t i = 0; i < got.size(); ++i) {
    bool same = (std::isnan(got[i]) && std::isnan(want[i])) || got[i] == want[i];
    if (!same) return ::testing::AssertionFailure() << "element " << i << ": got " << num(got[i]) << ", want " << num(want[i]);
  }
  return ::testing::AssertionSuccess();
}

// |got - want| <= atol + rtol * |want| for every element; NaN matches NaN, inf matches the same inf.
inline ::testing::AssertionResult closeValues(const Tensor& t, const std::vector<double>& want, double rtol = 1e-6,
                                              double atol = 1e-7) {
  std::vector<double> got = doubles(t);
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "got " << got.size() << " elements, want " << want.size();
  for (size_t i = 0; i < got.size(); ++i) {
    bool ok = (std::isnan(got[i]) && std::isnan(want[i])) || got[i] == want[i] ||
              std::abs(got[i] - want[i]) <= atol + rtol * std::abs(want[i]);
    if (!ok)
      return ::testing::AssertionFailure() << "element " << i << ": got " << num(got[i]) << ", want " << num(want[i]);
  }
  return ::testing::AssertionSuccess();
}

}  // namespace kiln::test
