// Differential testing of the CPU backend against the reference interpreter: build a function,
// run both on the same inputs, compare with dtype-aware tolerances (or compare their errors).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "frontend/parser.h"
#include "ir/interp/interpreter.h"
#include "ir/printer.h"
#include "runtime/backend.h"
#include "runtime/executable.h"
#include "runtime/random_inputs.h"

namespace kiln::test {

// How far a CPU result may be from the interpreter's. Ints, bools and layout ops are bit-exact;
// float results may differ by `ulps` units in the last place of their dtype, or by `atol` times
// the largest magnitude in the expected tensor (for sums, where the order of additions differs).
struct Tolerance {
  int64_t ulps = 0;
  double atol = 0;
};
// Elementwise float math: a few ulp (libm and LLVM may evaluate differently, f16/bf16 round once).
inline Tolerance mathTolerance() { return {4, 0}; }
// Reductions, matmul, convolution, normalisations: the interpreter accumulates in double.
inline Tolerance accumulateTolerance() { return {64, 1e-5}; }

// Ordered integer image of a float's bits, so that ulp distance is a subtraction.
inline int64_t orderedBits(const Tensor& t, int64_t i) {
  const auto* p = static_cast<const uint8_t*>(t.data());
  switch (t.dtype()) {
    case DType::F64: {
      int64_t b;
      std::memcpy(&b, p + i * 8, 8);
      return b < 0 ? std::numeric_limits<int64_t>::min() - b : b;
    }
    case DType::F32: {
      int32_t b;
      std::memcpy(&b, p + i * 4, 4);
      return b < 0 ? int64_t{INT32_MIN} - b : b;
    }
    default: {  // f16, bf16
      int16_t b;
      std::memcpy(&b, p + i * 2, 2);
      return b < 0 ? int64_t{INT16_MIN} - b : b;
    }
  }
}

// "" if `got` matches `want`, else a description of the first mismatches.
inline std::string compareTensors(const Tensor& want, const Tensor& got, Tolerance tol) {
  if (want.type() != got.type()) return "type " + got.type().str() + ", expected " + want.type().str();
  if (!isFloat(want.dtype())) {
    if (want == got) return "";
    for (int64_t i = 0; i < want.numElements(); ++i)
      if (want.getInt(i) != got.getInt(i))
        return "element " + std::to_string(i) + ": " + std::to_string(got.getInt(i)) + ", expected " +
               std::to_string(want.getInt(i));
    return "bytes differ";
  }
  double scale = 0;
  for (int64_t i = 0; i < want.numElements(); ++i)
    if (std::isfinite(want.getDouble(i))) scale = std::max(scale, std::fabs(want.getDouble(i)));
  std::string report;
  int bad = 0;
  for (int64_t i = 0; i < want.numElements(); ++i) {
    double w = want.getDouble(i), g = got.getDouble(i);
    bool ok;
    if (std::isnan(w) || std::isnan(g)) {
      ok = std::isnan(w) && std::isnan(g);
    } else if (std::isinf(w) || std::isinf(g)) {
      ok = w == g;
    } else {
      int64_t ulps = std::llabs(orderedBits(want, i) - orderedBits(got, i));
      ok = ulps <= tol.ulps || std::fabs(w - g) <= tol.atol * std::max(1.0, scale);
    }
    if (!ok && bad++ < 4) {
      char line[160];
      std::snprintf(line, sizeof line, "element %lld: %.9g, expected %.9g; ", static_cast<long long>(i), g, w);
      report += line;
    }
  }
  return bad ? std::to_string(bad) + " of " + std::to_string(want.numElements()) + " differ: " + report : "";
}

// Parses `text` (a module whose entry is checked) and fails the test on a parse error.
inline std::unique_ptr<Module> parseOrFail(const std::string& text) {
  auto m = parseModule(text, "test.kiln");
  if (!m) {
    ADD_FAILURE() << m.error().str() << "\n" << text;
    return nullptr;
  }
  return std::move(*m);
}

// A module @main(params) computing one op line "%r = OPLINE" and returning %r, with the result
// type inferred: parsed once without results to learn the type, then again with it.
inline std::unique_ptr<Module> oneOp(const std::string& params, const std::string& opLine) {
  auto probe = parseModule("func @main(" + params + ") -> () {\n  %r = " + opLine + "\n  return\n}\n", "test.kiln");
  if (!probe) {
    ADD_FAILURE() << probe.error().str() << "\n  " << opLine;
    return nullptr;
  }
  const Op& op = *(*probe)->entry()->body().ops().front();
  std::string type = op.result(0)->type().str();
  return parseOrFail("func @main(" + params + ") -> " + type + " {\n  %r = " + opLine + "\n  return %r\n}\n");
}

// Replaces a few elements of float inputs by NaN, +-inf and +-0, so special values are covered.
inline void sprinkleSpecials(Tensor& t, uint64_t seed) {
  if (!isFloat(t.dtype()) || t.numElements() < 8) return;
  const double specials[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0};
  for (int k = 0; k < 5; ++k) t.setDouble(static_cast<int64_t>((seed * 7919 + k * 104729) % t.numElements()), specials[k]);
}

// Whether the CUDA backend can run here (driver and GPU present), asked once.
inline bool cudaPresent() {
  static const bool present = resolveBackend(Backend::Cuda).ok();
  return present;
}

// "f.kiln:3:5" or "no location", to compare where two errors point.
inline std::string locationText(const SourceLoc& loc) {
  return loc.known() ? loc.str() : "no location";
}

struct DiffOptions {
  Tolerance tol;
  uint64_t seed = 1;
  bool specials = false;  // sprinkle NaN/inf/0 into float inputs
  int64_t intBound = 0;   // if > 0: integer inputs in [0, intBound) instead of the default
  int64_t maxWhileIterations = 10'000'000;
  // Passes of the compile pipeline to skip ({"all"}: each op its own kernel, computed exactly as
  // the interpreter computes it; by default decomposition may move results by an ulp).
  std::vector<std::string> disabledPasses = {};
  // The CUDA backend's tolerance, where it must differ from `tol`: NVPTX contracts multiply-adds
  // into fma and libdevice's exp/log are not the host libm, so a GPU agrees to a few ulps where the
  // CPU backend agrees to the bit.
  std::optional<Tolerance> gpuTol = std::nullopt;
};

// Runs `f` on the interpreter and the CPU backend with random inputs and compares. If the
// interpreter fails, the CPU backend must fail with the same message and location.
inline void expectSameAsInterpreter(const Function& f, const DiffOptions& o = {}) {
  std::vector<Tensor> inputs = randomInputs(f, o.seed);
  std::vector<Value*> params = f.params();
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (o.intBound > 0 && isInt(inputs[i].dtype())) inputs[i] = randomTensor(inputs[i].type(), o.seed + i, o.intBound);
    if (o.specials) sprinkleSpecials(inputs[i], o.seed + i);
  }
  std::string program = printFunction(f);
  InterpretOptions io;
  io.maxWhileIterations = o.maxWhileIterations;
  auto want = interpret(f, inputs, io);
  // The CPU backend always; the CUDA backend too where a GPU is present (CudaBackend.Present
  // skips visibly where it is not).
  std::vector<codegen::Target> targets = {codegen::Target::Cpu};
  if (cudaPresent()) targets.push_back(codegen::Target::Cuda);
  for (codegen::Target target : targets) {
    const char* name = target == codegen::Target::Cuda ? "cuda" : "cpu";
    SCOPED_TRACE(std::string("backend ") + name);
    codegen::CompileOptions compileOptions;
    compileOptions.target = target;
    compileOptions.disabledPasses = o.disabledPasses;
    auto exe = Executable::compile(f, compileOptions);
    ASSERT_TRUE(exe.ok()) << exe.error().str() << "\n" << program;
    ExecuteOptions eo;
    eo.maxWhileIterations = o.maxWhileIterations;
    auto got = (*exe)->run(inputs, eo);
    if (!want) {
      ASSERT_FALSE(got.ok()) << "the interpreter fails (" << want.error().str() << ") but the " << name
                             << " backend does not\n"
                             << program;
      // The CPU backend re-interprets a failed kernel for the interpreter's exact words; the GPU
      // reports the failing op's check and location.
      if (target == codegen::Target::Cpu) EXPECT_EQ(got.error().str(), want.error().str()) << program;
      else EXPECT_EQ(locationText(got.error().loc()), locationText(want.error().loc())) << program;
      continue;
    }
    ASSERT_TRUE(got.ok()) << got.error().str() << "\n" << program;
    ASSERT_EQ(got->size(), want->size());
    for (size_t i = 0; i < want->size(); ++i) {
      std::string diff =
          compareTensors((*want)[i], (*got)[i], target == codegen::Target::Cuda && o.gpuTol ? *o.gpuTol : o.tol);
      EXPECT_EQ(diff, "") << "result " << i << " of\n" << program;
    }
  }
}

}  // namespace kiln::test
