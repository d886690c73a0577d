// RNN, GRU and LSTM, unrolled: the sequence length is static, so each time step is a few matmuls
// and elementwise ops, in order (or reversed, or both directions for bidirectional). layout = 1
// (batch first) transposes in and out. sequence_lens below the full length, clip and LSTM's
// input_forget are not supported yet.
#include <algorithm>

#include "frontend/onnx/onnx_converters.h"

namespace kiln::onnx_import {

namespace {

Value* sliceRows(NodeContext& c, Value* v, int64_t axis, int64_t start, int64_t count) {
  return c.op(OpKind::Slice, {v}, {{"starts", Attr::ints({start})}, {"ends", Attr::ints({start + count})}, {"axes", Attr::ints({axis})}});
}

Expected<Value*> activate(NodeContext& c, const std::string& name, Value* x) {
  if (name == "Tanh") return c.op(OpKind::Tanh, {x});
  if (name == "Sigmoid") return c.op(OpKind::Sigmoid, {x});
  if (name == "Relu") return c.op(OpKind::Relu, {x});
  return c.unsupported("activation '" + name + "'");
}

enum class Cell { Rnn, Gru, Lstm };

template <Cell K>
Status recurrent(NodeContext& c) {
  constexpr bool Gru = K == Cell::Gru, Lstm = K == Cell::Lstm;
  constexpr int64_t kActs = K == Cell::Rnn ? 1 : K == Cell::Gru ? 2 : 3;
  auto xIn = c.input(0);
  if (!xIn) return xIn.error();
  auto w = c.input(1);
  if (!w) return w.error();
  auto r = c.input(2);
  if (!r) return r.error();
  if (c.hasAttr("clip")) return c.unsupported("clip");
  bool batchFirst = c.intAttr("layout", 0) == 1;
  Value* x = batchFirst ? c.op(OpKind::Transpose, {*xIn}, {{"perm", Attr::ints({1, 0, 2})}}) : *xIn;
  if (!x) return c.b().status();
  const Shape& xs = x->type().shape;  // [seq, batch, input]
  const int64_t gates = Gru ? 3 : Lstm ? 4 : 1;
  if (Lstm && c.intAttr("input_forget", 0)) return c.unsupported("input_forget");
  int64_t hidden = (*r)->type().shape.back(), seq = xs[0], batch = xs[1];
  // sequence_lens that are known and all full length change nothing; shorter ones are not supported.
  if (c.hasInput(4)) {
    auto lens = c.staticInts(4, "sequence_lens");
    if (!lens) return lens.error();
    if (std::any_of(lens->begin(), lens->end(), [&](int64_t n) { return n != seq; }))
      return c.unsupported("sequence_lens shorter than the sequence");
  }
  std::string direction = c.stringAttr("direction", "forward");
  int64_t dirs = direction == "bidirectional" ? 2 : 1;
  std::vector<std::string> acts;
  if (auto a = c.attr("activations")) for (const auto& s : a->strings()) acts.push_back(s);
  if (acts.empty())
    acts = Lstm ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
           : Gru ? std::vector<std::string>{"Sigmoid", "Tanh"} : std::vector<std::string>{"Tanh"};
  if (acts.size() == static_cast<size_t>(kActs) && dirs == 2) acts.insert(acts.end(), acts.begin(), acts.end());
  if (acts.size() != static_cast<size_t>(kActs * dirs)) return c.error("expects " + std::to_string(kActs * dirs) + " activations");
  std::vector<Value*> lastC;
  DType t = x->type().dtype;
  std::vector<Value*> ys, lastH;
  for (int64_t d = 0; d < dirs; ++d) {
    bool reverse = direction == "reverse" || d == 1;
    Value* wt = c.op(OpKind::Transpose, {c.reshape(sliceRows(c, *w, 0, d, 1), {gates * hidden, xs[2]})}, {{"perm", Attr::ints({1, 0})}});
    Value* rd = c.reshape(sliceRows(c, *r, 0, d, 1), {gates * hidden, hidden});
    Value* wb = nullptr;
    Value* rb = nullptr;
    if (c.hasInput(3)) {
      auto b = c.input(3);
      if (!b) return b.error();
      Value* bd = c.reshape(sliceRows(c, *b, 0, d, 1), {2 * gates * hidden});
      wb = sliceRows(c, bd, 0, 0, gates * hidden);
      rb = sliceRows(c, bd, 0, gates * hidden, gates * hidden);
    } else {
      wb = rb = c.op(OpKind::BroadcastTo, {c.scalar(t, 0)}, {{"shape", Attr::ints({gates * hidden})}});
    }
    Value* h;
    if (c.hasInput(5)) {
      auto h0 = c.input(5);
      if (!h0) return h0.error();
      Value* h0v = batchFirst ? c.op(OpKind::Transpose, {*h0}, {{"perm", Attr::ints({1, 0, 2})}}) : *h0;
      h = c.reshape(sliceRows(c, h0v, 0, d, 1), {batch, hidden});
    } else {
      h = c.op(OpKind::BroadcastTo, {c.scalar(t, 0)}, {{"shape", Attr::ints({batch, hidden})}});
    }
    const std::string& f = acts[static_cast<size_t>(d * kActs)];
    const std::string& g = acts[static_cast<size_t>(d * kActs + (kActs > 1 ? 1 : 0))];
    const std::string& hAct = acts[static_cast<size_t>(d * kActs + kActs - 1)];
    // LSTM's cell state and peepholes (P: [dirs, 3H] for the i, o, f gates).
    Value* cell = nullptr;
    Value* peep = nullptr;
    if (Lstm) {
      if (c.hasInput(6)) {
        auto c0 = c.input(6);
        if (!c0) return c0.error();
        Value* c0v = batchFirst ? c.op(OpKind::Transpose, {*c0}, {{"perm", Attr::ints({1, 0, 2})}}) : *c0;
        cell = c.reshape(sliceRows(c, c0v, 0, d, 1), {batch, hidden});
      } else {
        cell = c.op(OpKind::BroadcastTo, {c.scalar(t, 0)}, {{"shape", Attr::ints({batch, hidden})}});
      }
      if (c.hasInput(7)) {
        auto p = c.input(7);
        if (!p) return p.error();
        peep = c.reshape(sliceRows(c, *p, 0, d, 1), {3 * hidden});
      }
    }
    // Per-gate weights: rows [k*H, (k+1)*H) of the stacked gates (z, r, h for GRU).
    auto gate = [&](Value* m, int64_t k, int64_t axis) { return sliceRows(c, m, axis, k * hidden, hidden); };
    std::vector<Value*> steps(static_cast<size_t>(seq));
    for (int64_t i = 0; i < seq; ++i) {
      int64_t step = reverse ? seq - 1 - i : i;
      Value* xt = c.reshape(sliceRows(c, x, 0, step, 1), {batch, xs[2]});
      Value* xw = c.op(OpKind::Add, {c.op(OpKind::Matmul, {xt, wt}), wb});  // [batch, G*H]
      if (Lstm) {
        // Gates stacked i, o, f, c; peepholes i, o, f.
        Value* pre = c.op(OpKind::Add, {c.op(OpKind::Add, {xw, c.op(OpKind::Matmul, {h, c.op(OpKind::Transpose, {rd}, {{"perm", Attr::ints({1, 0})}})})}), rb});
        auto peephole = [&](Value* v, int64_t k, Value* state) {
          return peep ? c.op(OpKind::Add, {v, c.op(OpKind::Mul, {gate(peep, k, 0), state})}) : v;
        };
        auto in = activate(c, f, peephole(gate(pre, 0, 1), 0, cell));
        if (!in) return in.error();
        auto forget = activate(c, f, peephole(gate(pre, 2, 1), 2, cell));
        if (!forget) return forget.error();
        auto cand = activate(c, g, gate(pre, 3, 1));
        if (!cand) return cand.error();
        cell = c.op(OpKind::Add, {c.op(OpKind::Mul, {*forget, cell}), c.op(OpKind::Mul, {*in, *cand})});
        auto out = activate(c, f, peephole(gate(pre, 1, 1), 1, cell));
        if (!out) return out.error();
        auto squashed = activate(c, hAct, cell);
        if (!squashed) return squashed.error();
        h = c.op(OpKind::Mul, {*out, *squashed});
      } else if (!Gru) {
        Value* hr = c.op(OpKind::Add, {c.op(OpKind::Matmul, {h, c.op(OpKind::Transpose, {rd}, {{"perm", Attr::ints({1, 0})}})}), rb});
        auto next = activate(c, f, c.op(OpKind::Add, {xw, hr}));
        if (!next) return next.error();
        h = *next;
      } else {
        auto recur = [&](int64_t k, Value* state) {
          return c.op(OpKind::Matmul, {state, c.op(OpKind::Transpose, {gate(rd, k, 0)}, {{"perm", Attr::ints({1, 0})}})});
        };
        auto z = activate(c, f, c.op(OpKind::Add, {c.op(OpKind::Add, {gate(xw, 0, 1), recur(0, h)}), gate(rb, 0, 0)}));
        if (!z) return z.error();
        auto rg = activate(c, f, c.op(OpKind::Add, {c.op(OpKind::Add, {gate(xw, 1, 1), recur(1, h)}), gate(rb, 1, 0)}));
        if (!rg) return rg.error();
        Value* hPart = c.intAttr("linear_before_reset", 0)
                           ? c.op(OpKind::Mul, {*rg, c.op(OpKind::Add, {recur(2, h), gate(rb, 2, 0)})})
                           : c.op(OpKind::Add, {recur(2, c.op(OpKind::Mul, {*rg, h})), gate(rb, 2, 0)});
        auto cand = activate(c, g, c.op(OpKind::Add, {gate(xw, 2, 1), hPart}));
        if (!cand) return cand.error();
        Value* keep = c.op(OpKind::Mul, {*z, h});
        h = c.op(OpKind::Add, {c.op(OpKind::Mul, {c.op(OpKind::Sub, {c.scalar(t, 1), *z}), *cand}), keep});
      }
      steps[static_cast<size_t>(step)] = c.reshape(h, {1, 1, batch, hidden});
    }
    ys.push_back(c.op(OpKind::Concat, steps, {{"axis", Attr(int64_t{0})}}));
    lastH.push_back(c.reshape(h, {1, batch, hidden}));
    if (Lstm) lastC.push_back(c.reshape(cell, {1, batch, hidden}));
  }
  if (!c.b().status()) return c.b().status();
  Value* y = ys.size() == 1 ? ys[0] : c.op(OpKind::Concat, ys, {{"axis", Attr(int64_t{1})}});
  Value* yh = lastH.size() == 1 ? lastH[0] : c.op(OpKind::Concat, lastH, {{"axis", Attr(int64_t{0})}});
  if (batchFirst) {
    y = c.op(OpKind::Transpose, {y}, {{"perm", Attr::ints({2, 0, 1, 3})}});
    yh = c.op(OpKind::Transpose, {yh}, {{"perm", Attr::ints({1, 0, 2})}});
  }
  c.setOutput(1, yh);
  if (Lstm) {
    Value* yc = lastC.size() == 1 ? lastC[0] : c.op(OpKind::Concat, lastC, {{"axis", Attr(int64_t{0})}});
    c.setOutput(2, batchFirst ? c.op(OpKind::Transpose, {yc}, {{"perm", Attr::ints({1, 0, 2})}}) : yc);
  }
  if (!c.wantsOutput(0)) return c.b().status();
  return c.result(y);
}

}  // namespace

void addRecurrentConverters(ConverterTable& t) {
  t["RNN"] = recurrent<Cell::Rnn>;
  t["GRU"] = recurrent<Cell::Gru>;
  t["LSTM"] = recurrent<Cell::Lstm>;
}

}  // namespace kiln::onnx_import
