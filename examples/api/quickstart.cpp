// The C++ API in one page: build a graph, compile it for the CPU, run it, and check it against
// the reference interpreter. README.md shows this file; ctest builds and runs it.
#include <cmath>
#include <cstdio>

#include "kiln.h"

int main() {
  // y = softmax(relu(x @ w + b)), built in C++ (kiln::parseFile reads the same from a .kiln file).
  kiln::Module module;
  kiln::GraphBuilder b(module, "main");
  kiln::Value* x = b.param({kiln::DType::F32, {8, 32}}, "x");
  kiln::Value* w = b.param({kiln::DType::F32, {32, 10}}, "w");
  kiln::Value* bias = b.param({kiln::DType::F32, {10}}, "b");
  kiln::Value* h = b.op(kiln::OpKind::Relu, {b.op(kiln::OpKind::Add, {b.op(kiln::OpKind::Matmul, {x, w}), bias})});
  kiln::Value* y = b.op(kiln::OpKind::Softmax, {h}, {{"axis", kiln::Attr(1)}});
  kiln::Expected<kiln::Function*> f = b.finish({y});
  if (!f) return std::fprintf(stderr, "%s\n", f.error().str().c_str()), 1;
  std::printf("%s", kiln::printFunction(**f).c_str());

  // Compile once (LLVM O3 for this CPU, JIT-loaded; cached by content), run many times.
  kiln::codegen::CompileOptions options;
  options.target = kiln::codegen::Target::Cpu;
  auto exe = kiln::Executable::compile(**f, options);
  if (!exe) return std::fprintf(stderr, "%s\n", exe.error().str().c_str()), 1;

  std::vector<kiln::Tensor> inputs = kiln::randomInputs(**f, /*seed=*/7);
  auto results = (*exe)->run(inputs);
  if (!results) return std::fprintf(stderr, "%s\n", results.error().str().c_str()), 1;

  // The reference interpreter is the oracle every backend is tested against.
  auto expected = kiln::interpret(**f, inputs);
  if (!expected) return std::fprintf(stderr, "%s\n", expected.error().str().c_str()), 1;
  double worst = 0;
  for (int64_t i = 0; i < (*results)[0].numElements(); ++i)
    worst = std::fmax(worst, std::fabs((*results)[0].getDouble(i) - (*expected)[0].getDouble(i)));
  std::printf("kernels: %zu, y[0,0..2] = %.6f %.6f %.6f, max |cpu - interp| = %g\n", (*exe)->kernelNames().size(),
              (*results)[0].getDouble(0), (*results)[0].getDouble(1), (*results)[0].getDouble(2), worst);
  return worst <= 1e-6 ? 0 : 1;
}
