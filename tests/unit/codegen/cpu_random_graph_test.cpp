// Differential tests on random graphs: a seeded generator builds chains and DAGs of 5-20
// elementwise, reduction and layout ops with GraphBuilder; the CPU backend (and the CUDA backend
// where one runs: the simulator in ctest) must match the interpreter on each. A failure prints the
// graph and its seed. Wide graphs take a random shape of odd extents and extents past a vector,
// matrix products and layer norms, in every float dtype.
#include <random>

#include "ir/builder.h"
#include "tests/unit/codegen/cpu_test_util.h"

namespace kiln::test {
namespace {

// NumPy broadcasting: can `a` and `b` combine?
bool broadcastable(const Shape& a, const Shape& b) {
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    int64_t x = a[a.size() - 1 - i], y = b[b.size() - 1 - i];
    if (x != y && x != 1 && y != 1) return false;
  }
  return true;
}

class RandomGraph {
 public:
  // Wide: the parameters take one random shape of up to 4 dims (some dims 1, to broadcast),
  // extents drawn from kWideExtents, and matrix products and layer norms join the ops.
  explicit RandomGraph(uint64_t seed, bool wide = false) : rng_(seed), wide_(wide) {}

  Expected<Function*> build(Module& m, DType dtype) {
    GraphBuilder b(m, "main");
    dtype_ = dtype;
    int params = pick(1, 3);
    Shape base = wide_ ? wideShape() : Shape{};
    const Shape shapes[] = {{4, 6}, {2, 3, 4}, {6}, {4, 1}, {3, 4, 1}};
    for (int i = 0; i < params; ++i) {
      Shape shape = shapes[pick(0, 4)];
      if (wide_) {
        shape = base;
        for (int64_t& d : shape)
          if (i > 0 && pick(0, 4) == 0) d = 1;
      }
      pool_.push_back(b.param({dtype, shape}, "p" + std::to_string(i)));
    }
    int ops = pick(5, 20);
    for (int i = 0; i < ops; ++i) {
      // Mostly extend the newest value (chains), sometimes an older one (DAGs).
      Value* x = pick(0, 2) ? pool_.back() : pool_[static_cast<size_t>(pick(0, static_cast<int>(pool_.size()) - 1))];
      Value* y = addOp(b, x);
      if (!y) return b.status().error();
      pool_.push_back(y);
    }
    std::vector<Value*> results = {pool_.back()};
    if (pick(0, 1)) results.push_back(pool_[static_cast<size_t>(pick(0, static_cast<int>(pool_.size()) - 2))]);
    return b.finish(results);
  }

 private:
  // Odd extents, and ones a vector of 8 or 16 lanes divides or overruns by one.
  static constexpr int64_t kWideExtents[] = {1, 2, 3, 5, 7, 8, 16, 17, 31, 33, 64, 100};

  // A shape of 1 to 4 dims from kWideExtents, at most 100k elements (the interpreter runs each).
  Shape wideShape() {
    for (;;) {
      Shape s(static_cast<size_t>(pick(1, 4)));
      for (int64_t& d : s) d = kWideExtents[pick(0, 11)];
      if (numElements(s) <= 100000) return s;
    }
  }

  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

  // Random weights of `shape`, as constant data (a builder's parameters come before its ops).
  Value* weights(GraphBuilder& b, const Shape& shape) {
    return b.constant(randomTensor({dtype_, shape}, static_cast<uint64_t>(pick(0, 1 << 30))));
  }

  // x times random weights: a vector (matvec-as-rows on the CPU), a column [K, 1], or a square
  // matrix (oneDNN's constant weights, or generated kernels for f64 and f16 there).
  Value* matmul(GraphBuilder& b, Value* x) {
    const Shape& s = x->type().shape;
    if (s.size() < 2) return b.op(OpKind::Tanh, {x});
    int64_t k = s.back();
    switch (pick(0, 2)) {
      case 0: return b.op(OpKind::Matmul, {x, weights(b, {k})});
      case 1: return b.op(OpKind::Matmul, {x, weights(b, {k, 1})});
      default: return b.op(OpKind::Matmul, {x, weights(b, {k, k})});
    }
  }

  // A layer norm of x over its dims from a random axis, scale and bias random weights. Epsilon
  // 0.01: a chain can leave a row of nearly equal values, whose normalisation a tiny epsilon turns
  // into amplified rounding (the interpreter keeps the composite's steps in double).
  Value* layerNorm(GraphBuilder& b, Value* x) {
    const Shape& s = x->type().shape;
    if (s.empty()) return b.op(OpKind::Sigmoid, {x});
    int axis = pick(0, static_cast<int>(s.size()) - 1);
    Shape tail(s.begin() + axis, s.end());
    return b.op(OpKind::LayerNorm, {x, weights(b, tail), weights(b, tail)}, {{"axis", int64_t{axis}}, {"epsilon", 0.01}});
  }
  // A pool value that broadcasts with x (x itself if none does).
  Value* partner(Value* x) {
    std::vector<Value*> ok;
    for (Value* v : pool_)
      if (broadcastable(v->type().shape, x->type().shape)) ok.push_back(v);
    return ok.empty() ? x : ok[static_cast<size_t>(pick(0, static_cast<int>(ok.size()) - 1))];
  }

  Value* addOp(GraphBuilder& b, Value* x) {
    int rank = x->type().rank();
    // Smooth ops only: a floor or sign of a value that differs in the last bit would turn a
    // rounding difference into a large one.
    const OpKind unary[] = {OpKind::Tanh, OpKind::Sigmoid, OpKind::Sin, OpKind::Cos, OpKind::Neg, OpKind::Abs,
                            OpKind::Relu, OpKind::Silu, OpKind::Erf, OpKind::Gelu};
    const OpKind binary[] = {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Max, OpKind::Min};
    const OpKind reductions[] = {OpKind::ReduceSum, OpKind::ReduceMean, OpKind::ReduceMax, OpKind::ReduceMin};
    switch (pick(0, wide_ ? 11 : 9)) {
      case 10: return matmul(b, x);
      case 11: return layerNorm(b, x);
      case 0:
      case 1: return b.op(unary[pick(0, 9)], {x});
      case 2:
      case 3: return b.op(binary[pick(0, 4)], {x, partner(x)});
      case 4:
        if (rank == 0) return b.op(OpKind::Tanh, {x});
        return b.op(reductions[pick(0, 3)], {x}, {{"axes", Attr::ints({pick(0, rank - 1)})}, {"keepdims", true}});
      case 5: {
        if (rank < 2) return b.op(OpKind::Softmax, {x});
        std::vector<int64_t> perm(static_cast<size_t>(rank));
        for (int i = 0; i < rank; ++i) perm[static_cast<size_t>(i)] = i;
        std::shuffle(perm.begin(), perm.end(), rng_);
        return b.op(OpKind::Transpose, {x}, {{"perm", Attr::ints(perm)}});
      }
      case 6: {
        if (rank == 0) return b.op(OpKind::Sin, {x});
        int axis = pick(0, rank - 1);
        int64_t n = x->type().shape[static_cast<size_t>(axis)];
        if (pick(0, 1)) return b.op(OpKind::Concat, {x, x}, {{"axis", int64_t{axis}}});
        return b.op(OpKind::Slice, {x},
                    {{"starts", Attr::ints({n > 1 ? 1 : 0})}, {"ends", Attr::ints({n})}, {"axes", Attr::ints({axis})}});
      }
      case 7: {
        Value* y = partner(x);
        Value* c = b.op(OpKind::Gt, {x, y});
        return b.op(OpKind::Select, {c, x, y});
      }
      case 8: {
        if (rank == 0) return b.op(OpKind::Softmax, {x});
        return b.op(pick(0, 1) ? OpKind::Softmax : OpKind::LogSoftmax, {x}, {{"axis", int64_t{pick(0, rank - 1)}}});
      }
      default: {
        if (pick(0, 1)) return b.op(OpKind::Reshape, {x}, {{"shape", Attr::ints({-1})}});
        Shape s = x->type().shape;
        s.insert(s.begin(), 2);
        return b.op(OpKind::BroadcastTo, {x}, {{"shape", Attr::ints(s)}});
      }
    }
  }

  std::mt19937_64 rng_;
  bool wide_;
  DType dtype_ = DType::F32;
  std::vector<Value*> pool_;
};

TEST(CpuRandomGraphs, MatchTheInterpreter) {
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    for (DType dtype : {DType::F32, DType::F64}) {
      Module m;
      auto f = RandomGraph(seed).build(m, dtype);
      ASSERT_TRUE(f.ok()) << "seed " << seed << ": " << f.error().str();
      SCOPED_TRACE("random graph seed " + std::to_string(seed));
      // Chains of up to 20 ops let rounding differences grow a little beyond one op's.
      expectSameAsInterpreter(**f, {{256, 1e-5}, seed});
    }
  }
}

TEST(CpuRandomGraphs, WideShapesMatricesAndNarrowFloatsMatchTheInterpreter) {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    for (DType dtype : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
      Module m;
      auto f = RandomGraph(seed, /*wide=*/true).build(m, dtype);
      ASSERT_TRUE(f.ok()) << "seed " << seed << ": " << f.error().str();
      SCOPED_TRACE("wide random graph seed " + std::to_string(seed) + ", " + std::string(dtypeName(dtype)));
      // f16 and bf16 round every op's result, and the backends may round a fused chain's steps
      // differently from the interpreter (an fma, a sum's order): ulps of the narrow type.
      Tolerance tol = dtype == DType::BF16  ? Tolerance{8, 2e-2}
                      : dtype == DType::F16 ? Tolerance{16, 4e-3}
                                            : Tolerance{256, 1e-5};
      expectSameAsInterpreter(**f, {tol, seed});
    }
  }
}

}  // namespace
}  // namespace kiln::test
