// The optimizer updates (formulas in docs/training.md), written as elementwise IR over each
// parameter with the step's scalars (learning rate, bias corrections) computed once and shared.
#include "passes/optimizers.h"

namespace kiln::passes {

Expected<OptimizerConfig> parseOptimizer(std::string_view name) {
  OptimizerConfig c;
  if (name == "sgd") {
    c.kind = OptimizerKind::Sgd;
  } else if (name == "momentum") {
    c.kind = OptimizerKind::Momentum;
  } else if (name == "nesterov") {
    c.kind = OptimizerKind::Momentum;
    c.nesterov = true;
  } else if (name == "adam") {
    c.kind = OptimizerKind::Adam;
  } else if (name == "adamw") {
    c.kind = OptimizerKind::AdamW;
    c.weightDecay = 0.01;  // PyTorch's AdamW default
  } else {
    return Error("unknown optimizer '" + std::string(name) + "' (expected sgd, momentum, nesterov, adam or adamw)");
  }
  return c;
}

std::string_view optimizerName(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::Sgd: return "sgd";
    case OptimizerKind::Momentum: return "momentum";
    case OptimizerKind::Adam: return "adam";
    case OptimizerKind::AdamW: return "adamw";
  }
  return "?";
}

int stateSlots(OptimizerKind kind) { return static_cast<int>(stateSlotNames(kind).size()); }

std::vector<std::string> stateSlotNames(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::Sgd: return {};
    case OptimizerKind::Momentum: return {"velocity"};
    case OptimizerKind::Adam:
    case OptimizerKind::AdamW: return {"m", "v"};
  }
  return {};
}

namespace {

// The step's f32 scalars in a parameter's dtype (cast once per dtype would be nicer; CSE merges
// the repeated casts).
Value* inDType(GraphBuilder& b, Value* scalar, DType dtype) {
  if (dtype == DType::F32) return scalar;
  return b.op(OpKind::Cast, {scalar}, {{"to", Attr(dtype)}});
}

}  // namespace

UpdatedParams appendOptimizerUpdate(GraphBuilder& b, const OptimizerConfig& c, const std::vector<Value*>& params,
                                    const std::vector<Value*>& grads, const std::vector<std::vector<Value*>>& state,
                                    Value* lr, Value* step) {
  UpdatedParams out;
  out.state.resize(state.size());
  auto k = [&](double v) { return b.scalar(DType::F32, v); };
  // Adam: step size lr / (1 - b1^t) and the second moment's correction 1 / sqrt(1 - b2^t),
  // computed once per step on scalars (PyTorch's formulation, so results compare with it).
  Value* adamStep = nullptr;
  Value* adamV = nullptr;
  bool adam = c.kind == OptimizerKind::Adam || c.kind == OptimizerKind::AdamW;
  if (adam) {
    Value* c1 = b.op(OpKind::Sub, {k(1.0), b.op(OpKind::Pow, {k(c.beta1), step})});
    Value* c2 = b.op(OpKind::Sub, {k(1.0), b.op(OpKind::Pow, {k(c.beta2), step})});
    adamStep = b.op(OpKind::Div, {lr, c1});
    adamV = b.op(OpKind::Rsqrt, {c2});
  }
  for (size_t i = 0; i < params.size(); ++i) {
    Value* p = params[i];
    Value* g = grads[i];
    b.setDevice(GraphBuilder::writtenDevice(g));  // a placed step updates each parameter where its gradient is
    DType dt = p ? p->type().dtype : DType::F32;
    auto s = [&](double v) { return b.scalar(dt, v); };
    Value* lrT = inDType(b, lr, dt);
    if (c.weightDecay != 0.0 && c.kind != OptimizerKind::AdamW)
      g = b.op(OpKind::Add, {g, b.op(OpKind::Mul, {p, s(c.weightDecay)})});
    Value* np = nullptr;
    switch (c.kind) {
      case OptimizerKind::Sgd:
        np = b.op(OpKind::Sub, {p, b.op(OpKind::Mul, {g, lrT})});
        break;
      case OptimizerKind::Momentum: {
        // PyTorch's form: v' = mu v + g; p' = p - lr v' (Nesterov: p - lr (g + mu v')).
        Value* v = b.op(OpKind::Add, {b.op(OpKind::Mul, {state[0][i], s(c.momentum)}), g});
        Value* dir = c.nesterov ? b.op(OpKind::Add, {g, b.op(OpKind::Mul, {v, s(c.momentum)})}) : v;
        np = b.op(OpKind::Sub, {p, b.op(OpKind::Mul, {dir, lrT})});
        out.state[0].push_back(v);
        break;
      }
      case OptimizerKind::Adam:
      case OptimizerKind::AdamW: {
        Value* m = b.op(OpKind::Add, {b.op(OpKind::Mul, {state[0][i], s(c.beta1)}),
                                      b.op(OpKind::Mul, {g, s(1.0 - c.beta1)})});
        Value* v = b.op(OpKind::Add, {b.op(OpKind::Mul, {state[1][i], s(c.beta2)}),
                                      b.op(OpKind::Mul, {b.op(OpKind::Mul, {g, g}), s(1.0 - c.beta2)})});
        Value* denom = b.op(OpKind::Add, {b.op(OpKind::Mul, {b.op(OpKind::Sqrt, {v}), inDType(b, adamV, dt)}), s(c.eps)});
        Value* upd = b.op(OpKind::Mul, {b.op(OpKind::Div, {m, denom}), inDType(b, adamStep, dt)});
        Value* base = p;
        if (c.kind == OptimizerKind::AdamW && c.weightDecay != 0.0)  // decoupled: p (1 - lr wd)
          base = b.op(OpKind::Sub, {p, b.op(OpKind::Mul, {p, b.op(OpKind::Mul, {lrT, s(c.weightDecay)})})});
        np = b.op(OpKind::Sub, {base, upd});
        out.state[0].push_back(m);
        out.state[1].push_back(v);
        break;
      }
    }
    out.params.push_back(np);
  }
  b.setDevice(std::nullopt);
  return out;
}

}  // namespace kiln::passes
