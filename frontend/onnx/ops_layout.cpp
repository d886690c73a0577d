// Layout ONNX ops: Reshape, Flatten, Squeeze/Unsqueeze (reshapes), Transpose, Concat, Slice, Split
// (slices), Expand and Tile (reshape + broadcast_to), Gather, Pad, Identity. Shape-like inputs must
// be known at compile time (see NodeContext::staticInput), as kiln's shapes are static.
#include <algorithm>

#include "frontend/onnx/onnx_converters.h"
#include "ir/shape_rules.h"

namespace kiln::onnx_import {

namespace {

Expected<int64_t> resolveAxis(NodeContext& c, int64_t axis, int rank) {
  auto a = normalizeAxis(axis, rank);
  if (!a) return c.error("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return *a;
}

Status identity(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  return c.result(*x);
}

// Reshape: a 0 copies the input's dim at that index unless allowzero = 1; one -1 is inferred.
Status reshape(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  std::vector<int64_t> shape;
  if (c.opset() < 5) {
    shape = c.intsAttr("shape").value_or(std::vector<int64_t>{});
  } else {
    auto s = c.staticInts(1, "shape");
    if (!s) return s.error();
    shape = *s;
  }
  const Shape& in = (*x)->type().shape;
  if (c.intAttr("allowzero", 0) == 0) {
    for (size_t i = 0; i < shape.size(); ++i) {
      if (shape[i] != 0) continue;
      if (i >= in.size()) return c.error("shape[" + std::to_string(i) + "] = 0 copies a dim the input " + shapeStr(in) + " lacks");
      shape[i] = in[i];
    }
  }
  return c.result(c.op(OpKind::Reshape, {*x}, {{"shape", Attr::ints(shape)}}));
}

Status flatten(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  const Shape& in = (*x)->type().shape;
  int rank = static_cast<int>(in.size());
  int64_t axis = c.intAttr("axis", 1);
  if (axis < -rank || axis > rank) return c.error("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  if (axis < 0) axis += rank;
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < rank; ++i) (i < axis ? outer : inner) *= in[static_cast<size_t>(i)];
  return c.result(c.reshape(*x, {outer, inner}));
}

// The axes of Squeeze/Unsqueeze: an attribute before opset 13, an (optional) input from 13.
Expected<std::optional<std::vector<int64_t>>> squeezeAxes(NodeContext& c) {
  if (c.opset() < 13) return c.intsAttr("axes");
  if (!c.hasInput(1)) return std::optional<std::vector<int64_t>>{};
  auto axes = c.staticInts(1, "axes");
  if (!axes) return axes.error();
  return std::optional<std::vector<int64_t>>(*axes);
}

Status squeeze(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  auto axes = squeezeAxes(c);
  if (!axes) return axes.error();
  const Shape& in = (*x)->type().shape;
  int rank = static_cast<int>(in.size());
  std::vector<bool> drop(in.size(), false);
  if (!*axes) {
    for (int i = 0; i < rank; ++i) drop[static_cast<size_t>(i)] = in[static_cast<size_t>(i)] == 1;
  } else {
    for (int64_t a : **axes) {
      auto axis = resolveAxis(c, a, rank);
      if (!axis) return axis.error();
      if (in[static_cast<size_t>(*axis)] != 1) return c.error("cannot squeeze axis " + std::to_string(a) + " of size " + std::to_string(in[static_cast<size_t>(*axis)]));
      drop[static_cast<size_t>(*axis)] = true;
    }
  }
  Shape out;
  for (size_t i = 0; i < in.size(); ++i)
    if (!drop[i]) out.push_back(in[i]);
  return c.result(c.reshape(*x, out));
}

Status unsqueeze(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  auto axes = squeezeAxes(c);
  if (!axes) return axes.error();
  if (!*axes) return c.error("needs axes");
  const Shape& in = (*x)->type().shape;
  int outRank = static_cast<int>(in.size() + (*axes)->size());
  std::vector<bool> inserted(static_cast<size_t>(outRank), false);
  for (int64_t a : **axes) {
    auto axis = resolveAxis(c, a, outRank);
    if (!axis) return axis.error();
    if (inserted[static_cast<size_t>(*axis)]) return c.error("axis " + std::to_string(a) + " is listed twice");
    inserted[static_cast<size_t>(*axis)] = true;
  }
  Shape out;
  size_t next = 0;
  for (int i = 0; i < outRank; ++i) out.push_back(inserted[static_cast<size_t>(i)] ? 1 : in[next++]);
  return c.result(c.reshape(*x, out));
}

Status transpose(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  std::vector<int64_t> perm;
  if (auto p = c.intsAttr("perm")) {
    perm = *p;
  } else {
    for (int i = (*x)->type().rank() - 1; i >= 0; --i) perm.push_back(i);  // default: reverse the dims
  }
  return c.result(c.op(OpKind::Transpose, {*x}, {{"perm", Attr::ints(perm)}}));
}

Status concat(NodeContext& c) {
  auto xs = c.inputs();
  if (!xs) return xs.error();
  if (!c.hasAttr("axis")) return c.error("needs the 'axis' attribute");
  return c.result(c.op(OpKind::Concat, *xs, {{"axis", Attr(c.intAttr("axis", 0))}}));
}

// Slice: starts/ends/axes as attributes before opset 10; from 10 inputs 1-4 (axes, steps optional).
Status slice(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  AttrList attrs;
  if (c.opset() < 10) {
    auto starts = c.intsAttr("starts"), ends = c.intsAttr("ends");
    if (!starts || !ends) return c.error("needs the 'starts' and 'ends' attributes");
    attrs = {{"starts", Attr::ints(*starts)}, {"ends", Attr::ints(*ends)}};
    if (auto axes = c.intsAttr("axes")) attrs.push_back({"axes", Attr::ints(*axes)});
    return c.result(c.op(OpKind::Slice, {*x}, attrs));
  }
  const char* names[] = {"starts", "ends", "axes", "steps"};
  for (size_t i = 1; i <= 4; ++i) {
    if (!c.hasInput(i)) continue;
    auto v = c.staticInts(i, names[i - 1]);
    if (!v) return v.error();
    attrs.push_back({names[i - 1], Attr::ints(*v)});
  }
  return c.result(c.op(OpKind::Slice, {*x}, attrs));
}

// Split into outputs along `axis`: sizes from the attribute (before 13) or input 1, else equal
// parts (the last one smaller when the dim does not divide, as opset 18 specifies).
Status split(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  const Shape& in = (*x)->type().shape;
  auto axis = resolveAxis(c, c.intAttr("axis", 0), static_cast<int>(in.size()));
  if (!axis) return axis.error();
  int64_t dim = in[static_cast<size_t>(*axis)];
  std::vector<int64_t> sizes;
  if (c.opset() < 13 && c.hasAttr("split")) {
    sizes = *c.intsAttr("split");
  } else if (c.opset() >= 13 && c.hasInput(1)) {
    auto s = c.staticInts(1, "split");
    if (!s) return s.error();
    sizes = *s;
  } else {
    int64_t n = static_cast<int64_t>(c.numOutputs());
    if (n == 0) return c.error("has no outputs");
    int64_t part = (dim + n - 1) / n;
    for (int64_t i = 0, left = dim; i < n; ++i, left -= part) sizes.push_back(std::max<int64_t>(0, std::min(part, left)));
  }
  if (sizes.size() != c.numOutputs())
    return c.error(std::to_string(sizes.size()) + " split sizes for " + std::to_string(c.numOutputs()) + " outputs");
  int64_t start = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    Value* part = c.op(OpKind::Slice, {*x}, {{"starts", Attr::ints({start})}, {"ends", Attr::ints({start + sizes[i]})},
                                             {"axes", Attr::ints({*axis})}});
    if (!part) return c.b().status();
    c.setOutput(i, part);
    start += sizes[i];
  }
  if (start != dim) return c.error("split sizes add up to " + std::to_string(start) + ", the axis has " + std::to_string(dim));
  return c.b().status();
}

// Expand broadcasts both ways: the result has the broadcast of x's shape and the given one.
Status expand(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  auto shape = c.staticInts(1, "shape");
  if (!shape) return shape.error();
  auto out = broadcastShapes((*x)->type().shape, *shape);
  if (!out) return c.error("shape " + shapeStr(*shape) + " does not broadcast with the input " + (*x)->type().str());
  if (*out == (*x)->type().shape) return c.result(*x);
  return c.result(c.op(OpKind::BroadcastTo, {*x}, {{"shape", Attr::ints(*out)}}));
}

// Tile: x[d0,d1] -> reshape [1,d0,1,d1] -> broadcast_to [r0,d0,r1,d1] -> reshape [r0*d0, r1*d1].
Status tile(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  auto repeats = c.staticInts(1, "repeats");
  if (!repeats) return repeats.error();
  const Shape& in = (*x)->type().shape;
  if (repeats->size() != in.size())
    return c.error(std::to_string(repeats->size()) + " repeats for an input of rank " + std::to_string(in.size()));
  Shape interleaved, expanded, out;
  for (size_t i = 0; i < in.size(); ++i) {
    if ((*repeats)[i] < 0) return c.error("repeats must not be negative");
    interleaved.insert(interleaved.end(), {1, in[i]});
    expanded.insert(expanded.end(), {(*repeats)[i], in[i]});
    out.push_back((*repeats)[i] * in[i]);
  }
  Value* wide = c.op(OpKind::BroadcastTo, {c.reshape(*x, interleaved)}, {{"shape", Attr::ints(expanded)}});
  return c.result(c.reshape(wide, out));
}

Status gather(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  auto idx = c.input(1);
  if (!idx) return idx.error();
  return c.result(c.op(OpKind::Gather, {*x, *idx}, {{"axis", Attr(c.intAttr("axis", 0))}}));
}

Value* sliceAxis(NodeContext& c, Value* x, int64_t axis, int64_t start, int64_t end, int64_t step) {
  return c.op(OpKind::Slice, {x}, {{"starts", Attr::ints({start})}, {"ends", Attr::ints({end})}, {"axes", Attr::ints({axis})},
                                   {"steps", Attr::ints({step})}});
}

// Edge and reflect padding, one axis at a time: concat(before, x, after) of (reversed) slices.
Value* padBorders(NodeContext& c, Value* x, const std::vector<int64_t>& pads, bool reflect) {
  int rank = x->type().rank();
  for (int64_t axis = 0; axis < rank && x; ++axis) {
    int64_t b = pads[static_cast<size_t>(axis)], e = pads[static_cast<size_t>(rank + axis)];
    int64_t n = x->type().shape[static_cast<size_t>(axis)];
    if (b == 0 && e == 0) continue;
    std::vector<Value*> parts;
    auto repeated = [&](int64_t at, int64_t count) {
      Shape shape = x->type().shape;
      shape[static_cast<size_t>(axis)] = count;
      return c.op(OpKind::BroadcastTo, {sliceAxis(c, x, axis, at, at + 1, 1)}, {{"shape", Attr::ints(shape)}});
    };
    if (b > 0) parts.push_back(reflect ? sliceAxis(c, x, axis, b, 0, -1) : repeated(0, b));
    parts.push_back(x);
    // Backwards from n-2 for e elements; an end before index 0 is spelled below -n, since -1
    // would count from the back (ONNX Slice semantics).
    int64_t reflectEnd = n - 2 - e >= 0 ? n - 2 - e : -n - 1;
    if (e > 0) parts.push_back(reflect ? sliceAxis(c, x, axis, n - 2, reflectEnd, -1) : repeated(n - 1, e));
    x = c.op(OpKind::Concat, parts, {{"axis", Attr(axis)}});
  }
  return x;
}

// Pad: pads and value are attributes before opset 11, inputs from 11; modes constant, edge, reflect.
Status pad(NodeContext& c) {
  auto x = c.input(0);
  if (!x) return x.error();
  std::string mode = c.stringAttr("mode", "constant");
  if (mode != "constant" && mode != "edge" && mode != "reflect") return c.unsupported("mode '" + mode + "'");
  std::vector<int64_t> pads;
  double value = 0;
  if (c.opset() < 11) {
    pads = c.intsAttr(c.opset() < 2 ? "paddings" : "pads").value_or(std::vector<int64_t>{});
    value = c.floatAttr("value", 0.0f);
  } else {
    auto p = c.staticInts(1, "pads");
    if (!p) return p.error();
    pads = *p;
    if (c.hasInput(2)) {
      auto v = c.staticInput(2, "constant_value");
      if (!v) return v.error();
      if (v->numElements() != 1) return c.error("constant_value must hold one value");
      value = v->getDouble(0);
    }
    if (c.hasInput(3)) return c.unsupported("the axes input");
  }
  if (mode != "constant") {
    int rank = (*x)->type().rank();
    if (pads.size() != 2 * static_cast<size_t>(rank)) return c.error("needs 2 pads per axis");
    for (size_t i = 0; i < pads.size(); ++i) {
      int64_t n = (*x)->type().shape[i % static_cast<size_t>(rank)];
      if (pads[i] < 0 || (mode == "reflect" ? pads[i] >= n : (pads[i] > 0 && n == 0)))
        return c.error("pads " + shapeStr(pads) + " do not fit mode '" + mode + "' on " + (*x)->type().str());
    }
    return c.result(padBorders(c, *x, pads, mode == "reflect"));
  }
  return c.result(c.op(OpKind::Pad, {*x}, {{"pads", Attr::ints(pads)}, {"value", Attr(value)}}));
}

}  // namespace

void addLayoutConverters(ConverterTable& t) {
  t["Identity"] = identity;
  t["Reshape"] = reshape;
  t["Flatten"] = flatten;
  t["Squeeze"] = squeeze;
  t["Unsqueeze"] = unsqueeze;
  t["Transpose"] = transpose;
  t["Concat"] = concat;
  t["Slice"] = slice;
  t["Split"] = split;
  t["Expand"] = expand;
  t["Tile"] = tile;
  t["Gather"] = gather;
  t["Pad"] = pad;
}

}  // namespace kiln::onnx_import
