// Backward liveness over a decoded function's instructions: its register pressure (liveness.h).
#include "gpusim/ptx/liveness.h"

#include <algorithm>
#include <vector>

namespace gpusim::ptx {

namespace {

// A set of register slots, one bit each.
class RegisterSet {
 public:
  explicit RegisterSet(uint32_t registers) : words_((registers + 63) / 64, 0) {}
  void insert(uint32_t r) { words_[r / 64] |= uint64_t{1} << (r % 64); }
  void erase(uint32_t r) { words_[r / 64] &= ~(uint64_t{1} << (r % 64)); }
  // this |= other; whether anything was added.
  bool merge(const RegisterSet& other) {
    bool changed = false;
    for (size_t i = 0; i < words_.size(); ++i) {
      uint64_t merged = words_[i] | other.words_[i];
      changed |= merged != words_[i];
      words_[i] = merged;
    }
    return changed;
  }
  template <typename Fn>
  void forEach(Fn fn) const {
    for (size_t i = 0; i < words_.size(); ++i)
      for (uint64_t w = words_[i]; w; w &= w - 1) fn(static_cast<uint32_t>(i * 64 + __builtin_ctzll(w)));
  }

 private:
  std::vector<uint64_t> words_;
};

template <typename Fn>
void forEachRegister(const Operand& o, Fn fn) {
  if ((o.kind == Operand::Kind::Reg || o.kind == Operand::Kind::Addr) && o.reg != Operand::kNoReg) fn(o.reg);
  if (o.kind == Operand::Kind::Vec)
    for (uint8_t k = 0; k < o.count; ++k)
      if (o.vec[k] != Operand::kNoReg) fn(o.vec[k]);
}

bool endsFlow(Op op) { return op == Op::Ret || op == Op::Exit || op == Op::Trap; }

}  // namespace

uint32_t maxLiveRegisterWords(const Function& fn) {
  const uint32_t count = static_cast<uint32_t>(fn.instrs.size());
  auto words = [&](uint32_t r) -> uint32_t {
    Type t = r < fn.registerTypes.size() ? fn.registerTypes[r] : Type::B32;
    return t == Type::Pred || t == Type::None ? 0 : (typeBytes(t) + 3) / 4;
  };
  // live[i]: registers live on entry to instruction i; iterated backwards to a fixed point.
  std::vector<RegisterSet> live(count + 1, RegisterSet(fn.registers));
  auto liveIn = [&](uint32_t i) {
    const Instr& in = fn.instrs[i];
    RegisterSet out(fn.registers);
    bool fallsThrough = !(in.op == Op::Bra && in.guard == Operand::kNoReg) && !(endsFlow(in.op) && in.guard == Operand::kNoReg);
    if (fallsThrough) out.merge(live[i + 1]);
    if (in.op == Op::Bra) out.merge(live[in.target]);
    if (in.guard == Operand::kNoReg)
      for (uint8_t k = 0; k < in.ndst; ++k) forEachRegister(in.ops[k], [&](uint32_t r) { out.erase(r); });
    for (uint8_t k = in.ndst; k < in.ndst + in.nsrc; ++k) forEachRegister(in.ops[k], [&](uint32_t r) { out.insert(r); });
    if (in.guard != Operand::kNoReg) out.insert(in.guard);
    return out;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (uint32_t i = count; i-- > 0;) changed |= live[i].merge(liveIn(i));
  }
  // The pressure at an instruction: what is live into it, and what it defines while its sources
  // are still held.
  uint32_t most = 0;
  for (uint32_t i = 0; i < count; ++i) {
    RegisterSet held = live[i];
    const Instr& in = fn.instrs[i];
    for (uint8_t k = 0; k < in.ndst; ++k) forEachRegister(in.ops[k], [&](uint32_t r) { held.insert(r); });
    uint32_t total = 0;
    held.forEach([&](uint32_t r) { total += words(r); });
    most = std::max(most, total);
  }
  return most;
}

}  // namespace gpusim::ptx
