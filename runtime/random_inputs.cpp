// SplitMix64-based random tensors: tiny, portable, and the same everywhere (unlike std::
// distributions, whose output differs between standard libraries).
#include "runtime/random_inputs.h"

#include <algorithm>

#include "ir/splitmix64.h"

namespace kiln {

Tensor randomTensor(const TensorType& type, uint64_t seed, int64_t intBound) {
  Tensor t(type);
  SplitMix64 rng{seed};
  for (int64_t i = 0; i < t.numElements(); ++i) {
    uint64_t r = rng.next();
    if (type.dtype == DType::Bool) {
      t.setInt(i, static_cast<int64_t>(r >> 63));
    } else if (isInt(type.dtype)) {
      t.setInt(i, static_cast<int64_t>(r % static_cast<uint64_t>(std::max<int64_t>(intBound, 1))));
    } else {
      double unit = static_cast<double>(r >> 11) * 0x1.0p-53;  // [0, 1) with 53 random bits
      t.setDouble(i, 2.0 * unit - 1.0);
    }
  }
  return t;
}

int64_t integerInputBound(const Value& param) {
  int64_t bound = 0;
  auto tighten = [&](int64_t b) { bound = bound == 0 ? b : std::min(bound, b); };
  for (const Use& use : param.uses()) {
    const Op& op = *use.user;
    if (op.kind() == OpKind::Gather && use.index == 1) {
      const TensorType& x = op.operand(0)->type();
      int64_t axis = op.intAttr("axis");
      if (axis < 0) axis += x.rank();
      if (axis >= 0 && axis < x.rank()) tighten(x.shape[axis]);
    } else if (op.kind() == OpKind::SoftmaxCrossEntropy && use.index == 1) {
      tighten(op.operand(0)->type().shape[1]);
    } else if (op.kind() == OpKind::CheckRange && op.intAttr("min") <= 0 && op.intAttr("max") > 0) {
      tighten(op.intAttr("max"));  // values from 0 up pass
    }
  }
  return bound > 0 ? bound : 10;
}

std::vector<Tensor> randomInputs(const Function& function, uint64_t seed) {
  std::vector<Tensor> inputs;
  std::vector<Value*> params = function.params();
  for (size_t i = 0; i < params.size(); ++i) {
    // Decorrelates parameters that share a seed: the stream's next state, xor its output + i.
    SplitMix64 stream{seed};
    uint64_t output = stream.next();
    uint64_t mixed = stream.state ^ (output + i);
    inputs.push_back(randomTensor(params[i]->type(), mixed, integerInputBound(*params[i])));
  }
  return inputs;
}

}  // namespace kiln
