// kiln's C++ API in one page: build a graph, compile it for the CPU, run it, and check it against
// the reference interpreter. README.md shows this file; ctest builds it against an installed kiln
// (examples/cpp/CMakeLists.txt) and runs it.
#include <kiln/kiln.h>

#include <cmath>
#include <cstdio>

int main() {
  // y = softmax(relu(x @ w + b)), built in C++ (kiln::Graph::load reads the same from a .kiln file).
  kiln::FunctionBuilder b("main");
  kiln::Node x = b.param({kiln::DType::F32, {8, 32}}, "x");
  kiln::Node w = b.param({kiln::DType::F32, {32, 10}}, "w");
  kiln::Node bias = b.param({kiln::DType::F32, {10}}, "b");
  kiln::Node h = b.op("relu", {b.op("add", {b.op("matmul", {x, w}), bias})});
  kiln::Node y = b.op("softmax", {h}, {{"axis", int64_t{1}}});
  kiln::Expected<kiln::Graph> graph = b.finish({y});
  if (!graph) return std::fprintf(stderr, "%s\n", graph.error().str().c_str()), 1;
  std::printf("%s", graph->text().c_str());

  // Compile once (kiln's passes, then LLVM O3 for this CPU; cached by content), run many times.
  kiln::CompileOptions options;
  options.backend = kiln::Backend::Cpu;
  kiln::Expected<kiln::CompiledFunction> f = kiln::compile(*graph, options);
  if (!f) return std::fprintf(stderr, "%s\n", f.error().str().c_str()), 1;

  std::vector<kiln::Tensor> inputs = *graph->randomInputs(/*seed=*/7);
  kiln::Expected<std::vector<kiln::Tensor>> results = f->run(inputs);
  if (!results) return std::fprintf(stderr, "%s\n", results.error().str().c_str()), 1;

  // The reference interpreter is the oracle every backend is tested against.
  kiln::Expected<std::vector<kiln::Tensor>> expected = graph->interpret(inputs);
  if (!expected) return std::fprintf(stderr, "%s\n", expected.error().str().c_str()), 1;
  const kiln::Tensor& got = (*results)[0];
  double worst = 0;
  for (int64_t i = 0; i < got.numElements(); ++i)
    worst = std::fmax(worst, std::fabs(got.getDouble(i) - (*expected)[0].getDouble(i)));
  std::printf("kiln %s: %zu kernels, y[0,0..2] = %.6f %.6f %.6f, max |cpu - interp| = %g\n", kiln::version(),
              f->kernels().size(), got.getDouble(0), got.getDouble(1), got.getDouble(2), worst);
  return worst <= 1e-6 ? 0 : 1;
}
