// Differential tests on random graphs: a seeded generator builds chains and DAGs of 5-20
// elementwise, reduction and layout ops with GraphBuilder; the CPU backend must match the
// interpreter on each. A failure prints the graph and its seed.
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
  explicit RandomGraph(uint64_t seed) : rng_(seed) {}

  Expected<Function*> build(Module& m, DType dtype) {
    GraphBuilder b(m, "main");
    const Shape shapes[] = {{4, 6}, {2, 3, 4}, {6}, {4, 1}, {3, 4, 1}};
    int params = pick(1, 3);
    for (int i = 0; i < params; ++i) pool_.push_back(b.param({dtype, shapes[pick(0, 4)]}, "p" + std::to_string(i)));
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
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
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
    switch (pick(0, 9)) {
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

}  // namespace
}  // namespace kiln::test
