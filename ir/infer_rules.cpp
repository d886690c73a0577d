// Type and shape inference, one rule per op family. Messages say what was expected; the caller
// prefixes the op name and the location.
#include <algorithm>
#include <functional>
#include <numeric>

#include <fmt/format.h>

#include "ir/infer_rules.h"
#include "ir/ir.h"
#include "ir/shape_rules.h"

namespace kiln::infer {

namespace {

using Types = std::vector<TensorType>;

std::string str(int64_t v) { return std::to_string(v); }

Status checkDType(const TensorType& t, DTypeSet set, std::string_view what) {
  if (dtypeIn(t.dtype, set)) return {};
  return Error(std::string(what) + " must have " + std::string(dtypeSetName(set)) + ", got " + t.str());
}

Status sameDType(const Types& ts, size_t from = 0) {
  for (size_t i = from + 1; i < ts.size(); ++i)
    if (ts[i].dtype != ts[from].dtype)
      return Error("operand dtypes " + ts[from].str() + " and " + ts[i].str() + " differ (use cast)");
  return {};
}

Expected<Shape> broadcastAll(const Types& ts, size_t from = 0) {
  Shape out = ts[from].shape;
  for (size_t i = from + 1; i < ts.size(); ++i) {
    auto b = broadcastShapes(out, ts[i].shape);
    if (!b) return Error("operand shapes " + ts[from].str() + " and " + ts[i].str() + " do not broadcast");
    out = *b;
  }
  return out;
}

Expected<int> axisAttr(const Op& op, std::string_view name, int rank) {
  int64_t a = op.intAttr(name);
  auto n = normalizeAxis(a, rank);
  if (!n) return Error(std::string(name) + " " + str(a) + " is out of range for rank " + str(rank));
  return *n;
}

std::optional<std::vector<int64_t>> optionalInts(const Op& op, std::string_view name) {
  if (const Attr* a = op.findAttr(name)) return a->getIntList();
  return std::nullopt;
}

Status checkLength(const std::vector<int64_t>& v, size_t n, std::string_view name) {
  if (v.size() == n) return {};
  return Error(std::string(name) + " must have " + str(static_cast<int64_t>(n)) + " entries, got " +
               str(static_cast<int64_t>(v.size())));
}

Status checkPositive(const std::vector<int64_t>& v, std::string_view name) {
  for (int64_t x : v)
    if (x <= 0) return Error(std::string(name) + " must be positive, got " + Attr::ints(v).str());
  return {};
}

Status checkNonNegative(const std::vector<int64_t>& v, std::string_view name) {
  for (int64_t x : v)
    if (x < 0) return Error(std::string(name) + " must not be negative, got " + Attr::ints(v).str());
  return {};
}

// A region's parameters must have the given types.
Status checkRegionParams(const Block& region, const Types& want, std::string_view regionName) {
  if (region.numArguments() != want.size())
    return Error(std::string(regionName) + " region takes " + str(static_cast<int64_t>(region.numArguments())) +
                 " parameters, expected " + str(static_cast<int64_t>(want.size())));
  for (size_t i = 0; i < want.size(); ++i)
    if (region.argument(i)->type() != want[i])
      return Error(std::string(regionName) + " region parameter " + str(static_cast<int64_t>(i)) + " is " +
                   region.argument(i)->type().str() + ", expected " + want[i].str());
  return {};
}

Expected<Types> yieldedTypes(const Block& region, std::string_view regionName) {
  Op* term = region.terminator();
  if (!term || term->kind() != OpKind::Yield) return Error(std::string(regionName) + " region must end with yield");
  return term->operandTypes();
}

}  // namespace

Expected<Types> unary(const Op& op, const Types*) {
  TensorType t = op.operand(0)->type();
  KILN_TRY(checkDType(t, op.info().dtypes, "operand"));
  if (op.kind() == OpKind::Gelu) {
    std::string approx = op.attr("approximate").getString();
    if (approx != "none" && approx != "tanh") return Error("approximate must be \"none\" or \"tanh\", got \"" + approx + "\"");
  }
  if (op.kind() == OpKind::AllReduce) {
    std::string reduce = op.attr("reduce").getString();
    if (reduce != "sum" && reduce != "mean") return Error("reduce must be \"sum\" or \"mean\", got \"" + reduce + "\"");
  }
  return Types{t};
}

Expected<Types> binary(const Op& op, const Types*) {
  Types ts = op.operandTypes();
  KILN_TRY(sameDType(ts));
  KILN_TRY(checkDType(ts[0], op.info().dtypes, "operands"));
  auto shape = broadcastAll(ts);
  if (!shape) return shape.error();
  return Types{{ts[0].dtype, *shape}};
}

Expected<Types> compare(const Op& op, const Types*) {
  auto t = binary(op, nullptr);
  if (!t) return t.error();
  return Types{{DType::Bool, (*t)[0].shape}};
}

Expected<Types> select(const Op& op, const Types*) {
  Types ts = op.operandTypes();
  if (ts[0].dtype != DType::Bool) return Error("condition must be bool, got " + ts[0].str());
  KILN_TRY(sameDType(ts, 1));
  auto shape = broadcastAll(ts);
  if (!shape) return shape.error();
  return Types{{ts[1].dtype, *shape}};
}

Expected<Types> cast(const Op& op, const Types*) {
  return Types{{op.attr("to").getDType(), op.operand(0)->type().shape}};
}

Expected<Types> checkRange(const Op& op, const Types*) {
  TensorType t = op.operand(0)->type();
  KILN_TRY(checkDType(t, DTypeSet::Int, "operand"));
  int64_t min = op.intAttr("min"), max = op.intAttr("max");
  if (min >= max) return Error("needs min < max, got [" + std::to_string(min) + ", " + std::to_string(max) + ")");
  return Types{t};
}

Expected<Types> constant(const Op& op, const Types*) { return Types{op.attr("value").getDense().type()}; }

Expected<Types> iota(const Op& op, const Types* annotated) {
  if (!annotated || annotated->size() != 1) return Error("needs its result type written out, e.g. `: i32[8]`");
  const TensorType& t = (*annotated)[0];
  KILN_TRY(checkDType(t, DTypeSet::Num, "result"));
  auto axis = axisAttr(op, "axis", t.rank());
  if (!axis) return axis.error();
  return Types{t};
}

Expected<Types> reduce(const Op& op, const Types*) {
  TensorType t = op.operand(0)->type();
  KILN_TRY(checkDType(t, DTypeSet::Num, "operand"));
  if (const Attr* accumulate = op.findAttr("accumulate")) {
    // f64 is every float sum's default; f32 lets a backend keep an f32 sum in f32 (matvec-as-rows).
    DType want = accumulate->getDType();
    if (op.kind() != OpKind::ReduceSum) return Error("only reduce_sum takes 'accumulate'");
    bool allowed = (want == DType::F64 && isFloat(t.dtype)) || (want == DType::F32 && t.dtype == DType::F32);
    if (!allowed)
      return Error("accumulate = " + std::string(dtypeName(want)) + " does not apply to a sum of " + std::string(dtypeName(t.dtype)) +
                   " (f32 sums take f32 or f64, other float sums f64)");
  }
  auto axes = reductionAxes(optionalInts(op, "axes"), t.rank());
  if (!axes) return axes.error();
  return Types{{t.dtype, reducedShape(t.shape, *axes, op.attr("keepdims").getBool())}};
}

Expected<Types> argReduce(const Op& op, const Types*) {
  TensorType t = op.operand(0)->type();
  KILN_TRY(checkDType(t, DTypeSet::Num, "operand"));
  auto axis = axisAttr(op, "axis", t.rank());
  if (!axis) return axis.error();
  if (t.shape[*axis] == 0) return Error("cannot reduce an empty axis " + str(*axis) + " of " + t.str());
  return Types{{DType::I64, reducedShape(t.shape, {*axis}, op.attr("keepdims").getBool())}};
}

Expected<Types> softmax(const Op& op, const Types*) {
  TensorType t = op.operand(0)->type();
  KILN_TRY(checkDType(t, DTypeSet::Float, "operand"));
  auto axis = axisAttr(op, "axis", t.rank());
  if (!axis) return axis.error();
  return Types{t};
}

Expected<Types> layerNorm(const Op& op, const Types*) {
  Types ts = op.operandTypes();
  KILN_TRY(checkDType(ts[0], DTypeSet::Float, "operand"));
  KILN_TRY(sameDType(ts));
  auto axis = axisAttr(op, "axis", ts[0].rank());
  if (!axis) return axis.error();
  Shape normalized(ts[0].shape.begin() + *axis, ts[0].shape.end());
  for (size_t i = 1; i < 3; ++i)
    if (ts[i].shape != normalized)
      return Error(std::string(i == 1 ? "scale" : "bias") + " must have shape " + shapeStr(normalized) + " (x.shape[" +
                   str(*axis) + ":]), got " + ts[i].str());
  return Types{ts[0]};
}

Expected<Types> matmul(const Op& op, const Types*) {
  Types ts = op.operandTypes();
  KILN_TRY(sameDType(ts));
  KILN_TRY(checkDType(ts[0], DTypeSet::Num, "operands"));
  auto shape = matmulShape(ts[0].shape, ts[1].shape);
  if (!shape) return shape.error();
  return Types{{ts[0].dtype, *shape}};
}

Expected<Types> reshape(const Op& op, const Types*) {
  TensorType t = op.operand(0)->type();
  Shape shape = op.intsAttr("shape");
  int inferred = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (inferred >= 0) return Error("shape " + shapeStr(shape) + " has more than one -1");
      inferred = static_cast<int>(i);
    } else if (shape[i] < 0) {
      return Error("shape " + shapeStr(shape) + " has a negative dimension");
    } else if (__builtin_mul_overflow(known, shape[i], &known)) {
      return Error("shape " + shapeStr(shape) + " has too many elements");
    }
  }
  if (inferred >= 0) {
    if (known == 0 || t.numElements() % known != 0)
      return Error("cannot infer the -1 in " + shapeStr(shape) + " from " + str(t.numElements()) + " elements");
    shape[inferred] = t.numElements() / known;
    known *= shape[inferred];
  }
  if (known != t.numElements())
    return Error("cannot reshape " + t.str() + " (" + str(t.numElements()) + " elements) to " + shapeStr(shape) + " (" +
                 str(known) + " elements)");
  return Types{{t.dtype, shape}};
}

Expected<Types> transpose(const Op& op, const Types*) {
  TensorType t = op.operand(0)->type();
  std::vector<int64_t> perm = op.intsAttr("perm");
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> identity(t.rank());
  std::iota(identity.begin(), identity.end(), 0);
  if (sorted != identity)
    return Error("perm " + Attr::ints(perm).str() + " is not a permutation of the " + str(t.rank()) + " axes of " + t.str());
  return Types{{t.dtype, permuteShape(t.shape, perm)}};
}

Expected<Types> broadcastTo(const Op& op, const Types*) {
  TensorType t = op.operand(0)->type();
  Shape shape = op.intsAttr("shape");
  KILN_TRY(checkNonNegative(shape, "shape"));
  if (!broadcastsTo(t.shape, shape)) return Error(t.str() + " does not broadcast to " + shapeStr(shape));
  return Types{{t.dtype, shape}};
}

Expected<Types> concat(const Op& op, const Types*) {
  Types ts = op.operandTypes();
  KILN_TRY(sameDType(ts));
  auto axis = axisAttr(op, "axis", ts[0].rank());
  if (!axis) return axis.error();
  Shape out = ts[0].shape;
  for (size_t i = 1; i < ts.size(); ++i) {
    bool compatible = ts[i].rank() == ts[0].rank();
    for (int d = 0; compatible && d < ts[0].rank(); ++d)
      compatible = d == *axis || ts[i].shape[d] == ts[0].shape[d];
    if (!compatible)
      return Error("operand shapes " + ts[0].str() + " and " + ts[i].str() + " differ outside axis " + str(*axis));
    if (__builtin_add_overflow(out[*axis], ts[i].shape[*axis], &out[*axis]))
      return Error("the concatenated axis " + str(*axis) + " is too large");
  }
  return Types{{ts[0].dtype, out}};
}

Expected<Types> slice(const Op& op, const Types*) {
  TensorType t = op.operand(0)->type();
  auto axes = resolveSlice(t.shape, op.intsAttr("starts"), op.intsAttr("ends"), optionalInts(op, "axes"),
                           optionalInts(op, "steps"));
  if (!axes) return axes.error();
  Shape out;
  for (const SliceAxis& a : *axes) out.push_back(a.count);
  return Types{{t.dtype, out}};
}

Expected<TensorType> gatherType(const Op& op, const TensorType& x, const TensorType& idx) {
  KILN_TRY(checkDType(idx, DTypeSet::SignedInt, "indices"));
  auto axis = axisAttr(op, "axis", x.rank());
  if (!axis) return axis.error();
  Shape out(x.shape.begin(), x.shape.begin() + *axis);
  out.insert(out.end(), idx.shape.begin(), idx.shape.end());
  out.insert(out.end(), x.shape.begin() + *axis + 1, x.shape.end());
  return TensorType{x.dtype, out};
}

Expected<Types> gather(const Op& op, const Types*) {
  auto t = gatherType(op, op.operand(0)->type(), op.operand(1)->type());
  if (!t) return t.error();
  return Types{*t};
}

Expected<Types> pad(const Op& op, const Types*) {
  TensorType t = op.operand(0)->type();
  KILN_TRY(checkDType(t, DTypeSet::Num, "operand"));
  std::vector<int64_t> pads = op.intsAttr("pads");
  KILN_TRY(checkLength(pads, 2 * t.shape.size(), "pads"));
  Shape out = t.shape;
  for (int d = 0; d < t.rank(); ++d) {
    if (__builtin_add_overflow(out[d], pads[d], &out[d]) || __builtin_add_overflow(out[d], pads[d + t.rank()], &out[d]))
      return Error("pads " + Attr::ints(pads).str() + " make axis " + str(d) + " of " + t.str() + " too large");
    if (out[d] < 0) return Error("pads " + Attr::ints(pads).str() + " remove more than axis " + str(d) + " of " + t.str() + " holds");
  }
  return Types{{t.dtype, out}};
}

namespace {
Expected<TensorType> channelsFirstConv2dType(const Op& op, const TensorType& x, const TensorType& w) {
  if (x.rank() != 4) return Error("input must be [N,C,H,W], got " + x.str());
  if (w.rank() != 4) return Error("weights must be [O,C/groups,kh,kw], got " + w.str());
  auto strides = op.intsAttr("strides"), pads = op.intsAttr("pads"), dil = op.intsAttr("dilations");
  int64_t groups = op.intAttr("groups");
  KILN_TRY(checkLength(strides, 2, "strides"));
  KILN_TRY(checkLength(pads, 4, "pads"));
  KILN_TRY(checkLength(dil, 2, "dilations"));
  KILN_TRY(checkPositive(strides, "strides"));
  KILN_TRY(checkPositive(dil, "dilations"));
  KILN_TRY(checkNonNegative(pads, "pads"));
  if (groups <= 0 || x.shape[1] % groups != 0 || w.shape[0] % groups != 0)
    return Error("groups " + str(groups) + " must divide both input channels " + str(x.shape[1]) + " and output channels " +
                 str(w.shape[0]));
  int64_t channels = 0;  // with zero input channels, any positive groups passes the check above
  bool huge = __builtin_mul_overflow(w.shape[1], groups, &channels);
  if (huge || channels != x.shape[1])
    return Error("weights " + w.str() + " expect " + (huge ? str(w.shape[1]) + " x " + str(groups) : str(channels)) +
                 " input channels, input " + x.str() + " has " + str(x.shape[1]));
  int64_t h = windowOutputSize(x.shape[2], w.shape[2], strides[0], pads[0], pads[2], dil[0]);
  int64_t wd = windowOutputSize(x.shape[3], w.shape[3], strides[1], pads[1], pads[3], dil[1]);
  if (h <= 0 || wd <= 0) return Error("kernel " + w.str() + " is larger than the padded input " + x.str());
  return TensorType{x.dtype, {x.shape[0], w.shape[0], h, wd}};
}

// The result type of a conv2d or pool in `op`'s layout, from `channelsFirst`, its rule for [N,C,H,W]:
// channels-last is the same op on x's channels-first view, its result channels-last.
Expected<TensorType> inLayout(const Op& op, const TensorType& x,
                              const std::function<Expected<TensorType>(const TensorType&)>& channelsFirst) {
  const Attr* layout = op.findAttr("layout");
  if (!layout || layout->getString() == "nchw") return channelsFirst(x);
  if (layout->getString() != "nhwc")
    return Error("layout must be \"nchw\" or \"nhwc\", got \"" + layout->getString() + "\"");
  if (x.rank() != 4) return Error("input must be [N,H,W,C] (layout = \"nhwc\"), got " + x.str());
  auto t = channelsFirst(TensorType{x.dtype, permuteShape(x.shape, kChannelsFirst)});
  if (!t) return Error(t.error().message() + " (layout = \"nhwc\": the input " + x.str() + " read as [N,C,H,W])");
  return TensorType{t->dtype, permuteShape(t->shape, kChannelsLast)};
}
}  // namespace

Expected<TensorType> conv2dType(const Op& op, const TensorType& x, const TensorType& w) {
  KILN_TRY(checkDType(x, DTypeSet::Float, "input"));
  KILN_TRY(sameDType({x, w}));
  return inLayout(op, x, [&](const TensorType& view) { return channelsFirstConv2dType(op, view, w); });
}

Expected<Types> conv2d(const Op& op, const Types*) {
  auto t = conv2dType(op, op.operand(0)->type(), op.operand(1)->type());
  if (!t) return t.error();
  return Types{*t};
}

namespace {
Expected<TensorType> channelsFirstPool2dType(const Op& op, const TensorType& x) {
  if (x.rank() != 4) return Error("input must be [N,C,H,W], got " + x.str());
  auto kernel = op.intsAttr("kernel");
  KILN_TRY(checkLength(kernel, 2, "kernel"));
  KILN_TRY(checkPositive(kernel, "kernel"));
  auto strides = optionalInts(op, "strides").value_or(kernel);
  auto pads = op.intsAttr("pads");
  KILN_TRY(checkLength(strides, 2, "strides"));
  KILN_TRY(checkPositive(strides, "strides"));
  KILN_TRY(checkLength(pads, 4, "pads"));
  KILN_TRY(checkNonNegative(pads, "pads"));
  auto dil = optionalInts(op, "dilations").value_or(std::vector<int64_t>{1, 1});
  KILN_TRY(checkLength(dil, 2, "dilations"));
  KILN_TRY(checkPositive(dil, "dilations"));
  if (dil == std::vector<int64_t>{1, 1} &&
      (pads[0] >= kernel[0] || pads[2] >= kernel[0] || pads[1] >= kernel[1] || pads[3] >= kernel[1]))
    return Error("pads " + Attr::ints(pads).str() + " must be smaller than the kernel " + Attr::ints(kernel).str());
  int64_t h = windowOutputSize(x.shape[2], kernel[0], strides[0], pads[0], pads[2], dil[0]);
  int64_t w = windowOutputSize(x.shape[3], kernel[1], strides[1], pads[1], pads[3], dil[1]);
  if (h <= 0 || w <= 0) return Error("kernel " + Attr::ints(kernel).str() + " is larger than the padded input " + x.str());
  // Padding never takes part in a pool, so every window must hold a real element. A window that
  // starts inside the input holds one (its first tap); only those starting in the padding, at
  // either end, need a look.
  for (size_t axis = 0; axis < 2; ++axis) {
    int64_t outputs = axis == 0 ? h : w, size = x.shape[2 + axis];
    int64_t s = strides[axis], p = pads[axis], k = kernel[axis], d = dil[axis];
    auto real = [&](int64_t o) {  // the first tap at or after 0 is inside the input
      int64_t start = o * s - p;
      int64_t first = start >= 0 ? 0 : (-start + d - 1) / d;
      return first < k && start + first * d < size;
    };
    int64_t leading = std::min(outputs, (p + s - 1) / s);              // windows starting before 0
    int64_t trailing = std::min(outputs, (size + p + s - 1) / s);      // the first starting past the end
    constexpr int64_t kMaxEdgeWindows = int64_t{1} << 20;
    if (leading > kMaxEdgeWindows || outputs - trailing > kMaxEdgeWindows)
      return Error("pads " + Attr::ints(pads).str() + " are too large for a pool");
    auto check = [&](int64_t from, int64_t to) -> Status {
      for (int64_t o = from; o < to; ++o)
        if (!real(o))
          return Error(fmt::format("window {} along axis {} lies entirely in the padding (pads {}, dilations {})", o,
                                   2 + axis, Attr::ints(pads).str(), Attr::ints(dil).str()));
      return {};
    };
    KILN_TRY(check(0, leading));
    KILN_TRY(check(std::max(leading, trailing), outputs));
  }
  return TensorType{x.dtype, {x.shape[0], x.shape[1], h, w}};
}
}  // namespace

Expected<TensorType> pool2dType(const Op& op, const TensorType& x) {
  KILN_TRY(checkDType(x, DTypeSet::Float, "input"));
  return inLayout(op, x, [&](const TensorType& view) { return channelsFirstPool2dType(op, view); });
}

Expected<Types> pool2d(const Op& op, const Types*) {
  auto t = pool2dType(op, op.operand(0)->type());
  if (!t) return t.error();
  return Types{*t};
}

Expected<Types> batchNorm(const Op& op, const Types*) {
  Types ts = op.operandTypes();
  KILN_TRY(checkDType(ts[0], DTypeSet::Float, "input"));
  KILN_TRY(sameDType(ts));
  if (ts[0].rank() < 2) return Error("input must have rank >= 2 ([N,C,...]), got " + ts[0].str());
  static const char* names[] = {"x", "scale", "bias", "mean", "var"};
  for (size_t i = 1; i < 5; ++i)
    if (ts[i].shape != Shape{ts[0].shape[1]})
      return Error(std::string(names[i]) + " must have shape [" + str(ts[0].shape[1]) + "] (the channel axis), got " + ts[i].str());
  return Types{ts[0]};
}

Expected<Types> softmaxCrossEntropy(const Op& op, const Types*) {
  TensorType logits = op.operand(0)->type(), labels = op.operand(1)->type();
  KILN_TRY(checkDType(logits, DTypeSet::Float, "logits"));
  if (logits.rank() != 2) return Error("logits must be [N,K], got " + logits.str());
  if (!isSignedInt(labels.dtype) || labels.shape != Shape{logits.shape[0]})
    return Error("labels must be a signed integer tensor [" + str(logits.shape[0]) + "], got " + labels.str());
  if (logits.shape[0] == 0) return Error("logits must have at least one row, got " + logits.str());
  return Types{{logits.dtype, {}}};
}

Expected<Types> map(const Op& op, const Types*) {
  Types ts = op.operandTypes();
  Types sliced;
  for (const TensorType& t : ts) {
    if (t.rank() == 0) return Error("operands are sliced along axis 0, so they need rank >= 1, got " + t.str());
    if (t.shape[0] != ts[0].shape[0])
      return Error("operands must share their axis-0 length, got " + ts[0].str() + " and " + t.str());
    sliced.push_back({t.dtype, Shape(t.shape.begin() + 1, t.shape.end())});
  }
  KILN_TRY(checkRegionParams(*op.region(0), sliced, "body"));
  auto yields = yieldedTypes(*op.region(0), "body");
  if (!yields) return yields.error();
  Types out;
  for (TensorType t : *yields) {
    t.shape.insert(t.shape.begin(), ts[0].shape[0]);
    out.push_back(t);
  }
  return out;
}

// A fusion's body reads values of the enclosing blocks directly and takes no parameters; its
// results are what it yields.
Expected<Types> fusion(const Op& op, const Types*) {
  KILN_TRY(checkRegionParams(*op.region(0), {}, "body"));
  std::string kind = op.attr("kind").getString();
  if (kind != "loop" && kind != "row" && kind != "reduce" && kind != "library")
    return Error("kind must be \"loop\", \"row\", \"reduce\" or \"library\", got \"" + kind + "\"");
  return yieldedTypes(*op.region(0), "body");
}

Expected<Types> whileLoop(const Op& op, const Types*) {
  Types ts = op.operandTypes();
  KILN_TRY(checkRegionParams(*op.region(0), ts, "cond"));
  KILN_TRY(checkRegionParams(*op.region(1), ts, "body"));
  auto cond = yieldedTypes(*op.region(0), "cond");
  if (!cond) return cond.error();
  if (cond->size() != 1 || (*cond)[0] != TensorType{DType::Bool, {}})
    return Error("cond region must yield one bool[] value");
  auto body = yieldedTypes(*op.region(1), "body");
  if (!body) return body.error();
  if (*body != ts) {
    std::string got, want;
    for (const auto& t : *body) got += (got.empty() ? "" : ", ") + t.str();
    for (const auto& t : ts) want += (want.empty() ? "" : ", ") + t.str();
    return Error("body region must yield the loop-carried types (" + want + "), got (" + got + ")");
  }
  return ts;
}

Expected<Types> terminator(const Op&, const Types*) { return Types{}; }

}  // namespace kiln::infer
