// Warp-level collectives (executor.h): shfl.sync in every mode, vote.sync, redux.sync and
// activemask, with synccheck's rule that every live lane named in the member mask executes the
// same instruction, and the executing lanes are all in it.
#include <cstdio>

#include "gpusim/exec/executor.h"

namespace gpusim {

using ptx::Op;

namespace {
std::string mask32(uint32_t m) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%08x", m);
  return b;
}
}  // namespace

bool Executor::execCollective(Warp& warp, Frame& frame, const ptx::Instr& in, uint32_t exec) {
  const auto& ops = in.ops;
  auto src = [&](int i, int lane) { return read(frame, ops[in.ndst + i], lane); };
  if (in.op == Op::Activemask) {
    forLanes(exec, [&](int lane) { write(frame, ops[0], lane, exec, ptx::Type::B32); });
    return true;
  }
  if (exec == 0) return true;
  const int maskOperand = in.op == Op::Shfl ? 3 : (in.op == Op::Vote || in.op == Op::Redux) ? 1 : 1;
  uint32_t members = static_cast<uint32_t>(src(maskOperand, __builtin_ctz(exec)));
  uint32_t live = warp.liveMask & ~warp.exitedMask;
  if ((exec & ~members) != 0 || ((members & live) & ~exec) != 0) {
    return fail(Fault::CheckFailed, warp, in, __builtin_ctz(exec),
                std::string("synccheck: ") + ptx::opName(in.op) + " with member mask " + mask32(members) +
                    " executed by lanes " + mask32(exec) + " (live lanes " + mask32(live) +
                    "): every live member must execute it together, and only members");
  }

  switch (in.op) {
    case Op::Shfl: {
      uint64_t values[kWarpSize];
      forLanes(exec, [&](int lane) { values[lane] = src(0, lane); });
      forLanes(exec, [&](int lane) {
        uint32_t b = static_cast<uint32_t>(src(1, lane)), c = static_cast<uint32_t>(src(2, lane));
        uint32_t clamp = c & 0x1F, segmask = (c >> 8) & 0x1F;
        int maxLane = (lane & segmask) | (clamp & ~segmask);
        int minLane = lane & segmask;
        int j;
        bool valid;
        switch (in.shfl) {
          case ptx::ShflMode::Up: j = lane - int(b); valid = j >= maxLane; break;
          case ptx::ShflMode::Down: j = lane + int(b); valid = j <= maxLane; break;
          case ptx::ShflMode::Bfly: j = lane ^ int(b & 0x1F); valid = j <= maxLane; break;
          default: j = minLane | int(b & 0x1F & ~segmask); valid = j <= maxLane; break;
        }
        if (!valid || j < 0 || j >= kWarpSize) j = lane, valid = false;
        // Reading from a lane that is not executing gives an undefined value on hardware.
        uint64_t v = (exec >> j) & 1 ? values[j] : values[lane];
        write(frame, ops[0], lane, v, ptx::Type::B32);
        if (in.ndst > 1) write(frame, ops[1], lane, valid, ptx::Type::Pred);
      });
      return true;
    }
    case Op::Vote: {
      uint32_t ballot = 0;
      forLanes(exec, [&](int lane) {
        if (src(0, lane) & 1) ballot |= 1u << lane;
      });
      forLanes(exec, [&](int lane) {
        switch (in.vote) {
          case ptx::VoteMode::All: write(frame, ops[0], lane, ballot == exec, ptx::Type::Pred); break;
          case ptx::VoteMode::Any: write(frame, ops[0], lane, ballot != 0, ptx::Type::Pred); break;
          case ptx::VoteMode::Uni: write(frame, ops[0], lane, ballot == 0 || ballot == exec, ptx::Type::Pred); break;
          default: write(frame, ops[0], lane, ballot, ptx::Type::B32); break;
        }
      });
      return true;
    }
    case Op::Redux: {
      bool sgn = in.type == ptx::Type::S32;
      uint64_t acc = 0;
      bool first = true;
      forLanes(exec, [&](int lane) {
        uint32_t v = static_cast<uint32_t>(src(0, lane));
        if (first) {
          acc = v, first = false;
          return;
        }
        switch (in.atomOp) {
          case ptx::AtomOp::Add: acc = uint32_t(acc + v); break;
          case ptx::AtomOp::Min: acc = sgn ? uint32_t(std::min(int32_t(acc), int32_t(v))) : std::min<uint32_t>(acc, v); break;
          case ptx::AtomOp::Max: acc = sgn ? uint32_t(std::max(int32_t(acc), int32_t(v))) : std::max<uint32_t>(acc, v); break;
          case ptx::AtomOp::And: acc &= v; break;
          case ptx::AtomOp::Or: acc |= v; break;
          default: acc ^= v; break;
        }
      });
      forLanes(exec, [&](int lane) { write(frame, ops[0], lane, acc, ptx::Type::B32); });
      return true;
    }
    default:
      return fail(Fault::IllegalInstruction, warp, in, __builtin_ctz(exec),
                  std::string(ptx::opName(in.op)) + " is not supported by the simulator");
  }
}

}  // namespace gpusim
