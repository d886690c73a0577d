// channels-last: convolutions and the layout-free ops between them on NHWC values. See the header.
#include "passes/channels_last.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/shape_rules.h"
#include "passes/rewrite.h"

namespace kiln::passes {

namespace {

// A broadcast operand is transposed alongside a channels-last value when it is at most this
// fraction of the result: a bias or a per-image scale, not a second full-size tensor (which
// would cost a transpose kernel of its own where the NCHW value costs one).
constexpr int64_t kSmallOperandFraction = 4;

// A conv2d's, pool's or their backward op's attributes with layout = "nhwc": an input_shape (the
// result's shape) channels-last too.
AttrList channelsLastAttrs(const Op& op) {
  AttrList attrs = op.attrs();
  for (auto& [name, value] : attrs)
    if (name == "input_shape") value = Attr::ints(permuteShape(*value.getIntList(), kChannelsLast));
  attrs.emplace_back("layout", Attr("nhwc"));
  return attrs;
}

// A convolution or either of its gradients that oneDNN runs (f32: what its call takes, any pads,
// codegen/library_call.cpp), channels-first so far.
bool isEligibleConv(const Op& op) {
  bool convolution = op.kind() == OpKind::Conv2d || op.kind() == OpKind::Conv2dBackwardData ||
                     op.kind() == OpKind::Conv2dBackwardFilter;
  return convolution && !isChannelsLast(op) && op.result()->type().dtype == DType::F32;
}

bool worthConverting(const Block& body) {
  int convs = 0;
  for (const auto& op : body.ops()) convs += isEligibleConv(*op);
  return convs >= 2;
}

class Converter {
 public:
  bool run(Block& body) {
    std::vector<Op*> ops;
    for (const auto& op : body.ops()) ops.push_back(op.get());
    for (Op* op : ops) {
      if (isEligibleConv(*op)) convertConv(*op);
      else if (!carryThroughElementwise(*op) && !carryThroughReduction(*op) && !carryThroughPool(*op))
        readChannelsFirst(*op);
    }
    // What still reads a converted value (an op in a nested region) reads it transposed back
    // (in program order, so the IR printed is the same on every run).
    for (Op* op : ops) {
      if (!converted_.count(op)) continue;
      std::vector<Use> uses = op->result()->uses();
      for (const Use& use : uses)
        if (!converted_.count(use.user)) use.user->setOperand(use.index, channelsFirst(op->result()));
    }
    // The converted ops are dead now: users before producers, so each goes once its users have.
    for (auto it = ops.rbegin(); it != ops.rend(); ++it)
      if (converted_.count(*it) && !(*it)->result()->hasUses()) body.erase(*it);
    return !converted_.empty();
  }

 private:
  // A convolution on NHWC activations: conv2d(x, w) and conv2d_backward_data(dy, w) give NHWC
  // (recorded as twins), conv2d_backward_filter(x, dy) the same weights' gradient.
  void convertConv(Op& conv) {
    bool filter = conv.kind() == OpKind::Conv2dBackwardFilter;
    Value* second = filter ? channelsLast(conv, conv.operand(1)) : conv.operand(1);
    Value* converted = insertOpBefore(conv, conv.kind(), {channelsLast(conv, conv.operand(0)), second},
                                      channelsLastAttrs(conv), conv.result()->name());
    if (filter) replace(conv, converted);
    else record(conv, converted);
  }

  // An activation read as NHWC by `at`: its twin, or an NCHW value (a parameter, a flatten's
  // reshape back) transposed once for all its readers.
  Value* channelsLast(Op& at, Value* v) {
    if (Value* t = twin(v)) return t;
    auto [it, inserted] = transposedInputs_.emplace(v, nullptr);
    if (inserted) it->second = insertOpBefore(at, OpKind::Transpose, {v}, {{"perm", Attr::ints(kChannelsLast)}});
    return it->second;
  }

  // An elementwise op of rank-4 values, one of them channels-last: the same op channels-last.
  bool carryThroughElementwise(Op& op) {
    if (op.info().cls != OpClass::Elementwise || op.numResults() != 1 || op.result()->type().rank() != 4) return false;
    const int64_t size = op.result()->type().numElements();
    bool any = false;
    for (Value* v : op.operands()) {
      if (twin(v)) any = true;
      else if (v->type().rank() > 0 && v->type().numElements() * kSmallOperandFraction > size) return false;
    }
    if (!any) return false;
    std::vector<Value*> operands;
    for (Value* v : op.operands()) operands.push_back(twin(v) ? twin(v) : broadcastOperand(op, v));
    record(op, insertOpBefore(op, op.kind(), operands, op.attrs(), op.result()->name()));
    return true;
  }

  // A small operand broadcast against rank-4 values, moved the way they move: padded to rank 4
  // (NumPy aligns the trailing axes) and transposed. Where only axes of size 1 move (a bias
  // [c,1,1] becoming [1,1,1,c]), the elements keep their order and a reshape does it, which the
  // libraries read as a bias in place. A scalar broadcasts in any layout.
  Value* broadcastOperand(Op& at, Value* v) {
    const Shape& shape = v->type().shape;
    if (shape.empty()) return v;
    Shape padded(4 - shape.size(), 1);
    padded.insert(padded.end(), shape.begin(), shape.end());
    Shape moved = permuteShape(padded, kChannelsLast);
    auto withoutOnes = [](Shape s) {
      s.erase(std::remove(s.begin(), s.end(), 1), s.end());
      return s;
    };
    if (withoutOnes(padded) == withoutOnes(moved))
      return insertOpBefore(at, OpKind::Reshape, {v}, {{"shape", Attr::ints(moved)}});
    if (shape.size() < 4) v = insertOpBefore(at, OpKind::Reshape, {v}, {{"shape", Attr::ints(padded)}});
    return insertOpBefore(at, OpKind::Transpose, {v}, {{"perm", Attr::ints(kChannelsLast)}});
  }

  // reduce_* over explicit axes of a channels-last value: the same axes renumbered. Kept dims
  // leave the result channels-last; dropped ones leave it the same tensor whenever the axes kept
  // come in the same order both ways (n and c: a global pool's [n,c]).
  bool carryThroughReduction(Op& op) {
    if (op.info().batch != BatchRule::Reduce || !op.findAttr("axes") || !twin(op.operand(0))) return false;
    std::vector<int64_t> axes;
    // Where channels-first axis a sits channels-last is kChannelsFirst[a] (n 0, c 3, h 1, w 2):
    // the inverse of kChannelsLast.
    for (int64_t a : op.intsAttr("axes")) axes.push_back(kChannelsFirst[static_cast<size_t>(*normalizeAxis(a, 4))]);
    std::sort(axes.begin(), axes.end());
    bool keepdims = op.attr("keepdims").getBool();
    if (!keepdims) {
      std::vector<int64_t> kept;
      for (int64_t a = 0; a < 4; ++a)
        if (std::find(axes.begin(), axes.end(), kChannelsFirst[a]) == axes.end()) kept.push_back(kChannelsFirst[a]);
      if (!std::is_sorted(kept.begin(), kept.end())) return false;
    }
    AttrList attrs = op.attrs();
    for (auto& [name, value] : attrs)
      if (name == "axes") value = Attr::ints(axes);
    Value* reduced = insertOpBefore(op, op.kind(), {twin(op.operand(0))}, attrs, op.result()->name());
    if (keepdims) record(op, reduced);
    else replace(op, reduced);
    return true;
  }

  // A pool reading a channels-last value, and every pool gradient: the same op channels-last (a
  // ResNet's stem pool, which would otherwise cost a transpose each way around it; a gradient's
  // result, its forward op's input, feeds a convolution's gradients, and where its cotangent comes
  // channels-first, from a flatten's gradient, that is the smaller tensor to transpose).
  bool carryThroughPool(Op& op) {
    bool pool = op.kind() == OpKind::MaxPool2d || op.kind() == OpKind::AvgPool2d;
    bool gradient = op.kind() == OpKind::MaxPool2dBackward || op.kind() == OpKind::AvgPool2dBackward;
    if (!(pool && twin(op.operand(0))) && !gradient) return false;
    if (isChannelsLast(op)) return false;
    std::vector<Value*> operands;
    for (Value* v : op.operands()) operands.push_back(channelsLast(op, v));
    record(op, insertOpBefore(op, op.kind(), operands, channelsLastAttrs(op), op.result()->name()));
    return true;
  }

  // Any other op reads channels-first values: a converted operand transposed back.
  void readChannelsFirst(Op& op) {
    for (size_t i = 0; i < op.numOperands(); ++i)
      if (twin(op.operand(i))) op.setOperand(i, channelsFirst(op.operand(i)));
  }

  // `v` (converted) as NCHW: its NHWC twin transposed back, made once, where v was computed.
  Value* channelsFirst(Value* v) {
    auto [it, inserted] = channelsFirst_.emplace(v, nullptr);
    if (inserted)
      it->second = insertOpBefore(*v->definingOp(), OpKind::Transpose, {twin(v)}, {{"perm", Attr::ints(kChannelsFirst)}});
    return it->second;
  }

  Value* twin(Value* v) const {
    auto it = twins_.find(v);
    return it == twins_.end() ? nullptr : it->second;
  }
  void record(Op& op, Value* channelsLast) {
    twins_[op.result()] = channelsLast;
    converted_.insert(&op);
  }
  // `op` computed again channels-last as the same tensor (a weight gradient, a reduction's [n,c]).
  void replace(Op& op, Value* same) {
    op.result()->replaceAllUsesWith(same);
    converted_.insert(&op);
  }

  std::unordered_map<Value*, Value*> twins_;           // an NCHW value -> the same values as NHWC
  std::unordered_map<Value*, Value*> channelsFirst_;  // an NCHW value -> its twin transposed back
  std::unordered_map<Value*, Value*> transposedInputs_;  // an NCHW activation a converted op reads -> as NHWC
  std::unordered_set<Op*> converted_;                  // ops whose results the twins replace
};

}  // namespace

PassResult convertToChannelsLast(Module& module, PassContext&) {
  bool changed = false;
  for (const auto& f : module.functions())
    if (worthConverting(f->body())) changed |= Converter().run(f->body());
  return changed;
}

}  // namespace kiln::passes
