// The step loop, control flow, calls, barriers and operand access of the interpreter (executor.h).
#include "gpusim/exec/executor.h"

#include <algorithm>
#include <chrono>
#include <cstring>

namespace gpusim {

using ptx::Op;
using ptx::Operand;


Executor::Executor(const LaunchRequest& request, DeviceMemory& memory, const LaunchOptions& options,
                   LaunchResult& result)
    : request_(request),
      memory_(memory),
      options_(options),
      result_(result),
      module_(request.module->ptx),
      kernel_(&request.module->ptx.functions[request.function]) {
  // A thread's local memory holds the frames of any call chain: every function's frame, summed,
  // bounds a non-recursive chain (recursion past it is reported as an out-of-bounds local access).
  for (const ptx::Function& f : module_.functions) localPerThread_ += (f.localBytes + 15) / 16 * 16;
  threadsPerBlock_ = static_cast<uint32_t>(request.block.count());
}

bool Executor::runBlock(Dim3 ctaid) {
  ctaid_ = ctaid;
  uint32_t warpCount = (threadsPerBlock_ + kWarpSize - 1) / kWarpSize;
  shared_.assign(module_.staticSharedBytes + request_.dynamicSharedBytes, 0);
  if (options_.racecheck) sharedRecords_.assign((shared_.size() + 3) / 4, SharedWordRecord{});
  local_.assign(size_t(localPerThread_) * threadsPerBlock_, 0);
  blockEpoch_ = 1;
  warps_.resize(warpCount);
  for (uint32_t w = 0; w < warpCount; ++w) startWarp(warps_[w], w);

  // Warps run in turn until each is done or waits at a barrier; when every warp still running
  // waits, the barrier opens. A barrier some warp can never reach ends the launch with an error.
  for (;;) {
    bool anyRan = false;
    for (Warp& warp : warps_) {
      if (warp.done || warp.atBarrier) continue;
      if (!runWarp(warp)) return false;
      anyRan = true;
    }
    uint32_t waiting = 0, running = 0;
    for (const Warp& warp : warps_) {
      if (warp.done) continue;
      ++running;
      waiting += warp.atBarrier;
    }
    if (running == 0) return true;
    if (waiting == running) {
      for (Warp& warp : warps_) warp.atBarrier = false, ++warp.syncEpoch;
      ++blockEpoch_;
      continue;
    }
    if (!anyRan) return true;  // unreachable: a warp that is neither done nor waiting always runs
  }
}

void Executor::startWarp(Warp& warp, uint32_t index) {
  warp = Warp{};
  warp.index = index;
  uint32_t first = index * kWarpSize;
  uint32_t lanes = std::min<uint32_t>(kWarpSize, threadsPerBlock_ - first);
  warp.liveMask = lanes == 32 ? ~0u : (1u << lanes) - 1;
  Frame frame;
  frame.fn = kernel_;
  frame.regs.assign(size_t(kernel_->registers) * kWarpSize, 0);
  // The kernel's parameter buffer is copied into every lane's .param frame, which also holds the
  // .param variables the kernel declares for its calls.
  uint32_t frameBytes = std::max<uint32_t>(kernel_->frameBytes, static_cast<uint32_t>(request_.params.size()));
  frame.paramStride = (frameBytes + 7) / 8 * 8;
  frame.params.assign(size_t(frame.paramStride) * kWarpSize, 0);
  if (!request_.params.empty())
    for (int lane = 0; lane < kWarpSize; ++lane)
      std::memcpy(frame.param(lane, 0), request_.params.data(), request_.params.size());
  frame.simt.push_back({0, kNoReconvergence, warp.liveMask});
  warp.frames.push_back(std::move(frame));
}

bool Executor::runWarp(Warp& warp) {
  while (!warp.done && !warp.atBarrier) {
    if (!step(warp)) return false;
  }
  return true;
}

uint32_t Executor::guardMask(Frame& frame, const ptx::Instr& in, uint32_t active) {
  if (in.guard == Operand::kNoReg) return active;
  uint32_t mask = 0;
  forLanes(active, [&](int lane) {
    bool p = frame.reg(in.guard, lane) & 1;
    if (p != in.guardNegated) mask |= 1u << lane;
  });
  return mask;
}

bool Executor::step(Warp& warp) {
  currentWarp_ = &warp;
  Frame& frame = warp.frames.back();
  if (frame.simt.empty()) {
    leaveFrame(warp);
    return true;
  }
  SimtEntry& top = frame.simt.back();
  uint32_t active = top.mask & ~warp.exitedMask;
  if (active == 0 || top.pc == top.rpc) {
    frame.simt.pop_back();
    return true;
  }
  const auto& instrs = frame.fn->instrs;
  if (top.pc >= instrs.size()) {  // ran off the end: an implicit ret
    frame.simt.pop_back();
    return true;
  }
  const ptx::Instr& in = instrs[top.pc];
  if (options_.instructionBudget && result_.stats.warpInstructions >= options_.instructionBudget)
    return fail(Fault::Timeout, warp, in, __builtin_ctz(active),
                "the launch executed " + std::to_string(result_.stats.warpInstructions) +
                    " warp instructions, its budget (KILN_GPUSIM_BUDGET): an endless loop?");
  ++result_.stats.warpInstructions;
  uint32_t exec = guardMask(frame, in, active);
  result_.stats.threadInstructions += __builtin_popcount(exec);

  switch (in.op) {
    case Op::Bra: case Op::Call: case Op::Ret: case Op::Exit: case Op::Trap: case Op::BarSync:
    case Op::BarArrive: case Op::BarWarpSync: case Op::Brkpt:
      return execControl(warp, frame, in, exec);
    default: break;
  }
  bool ok;
  switch (in.op) {
    case Op::Ld: case Op::Ldu: case Op::St: case Op::Atom: case Op::Red: case Op::Membar: case Op::Fence:
    case Op::Prefetch:
      ok = execMemory(warp, frame, in, exec);
      break;
    case Op::Cvt: case Op::Cvta:
      ok = execConvert(warp, frame, in, exec);
      break;
    case Op::Shfl: case Op::Vote: case Op::Match: case Op::Redux: case Op::Activemask:
      ok = execCollective(warp, frame, in, exec);
      break;
    case Op::Nanosleep:
      ok = true;
      break;
    default:
      ok = execAlu(warp, frame, in, exec);
  }
  if (!ok) return false;
  // warp.frames may not have changed here (only control flow pushes frames), so `top` is valid.
  Frame& f = warp.frames.back();
  ++f.simt.back().pc;
  return true;
}

bool Executor::execControl(Warp& warp, Frame& frame, const ptx::Instr& in, uint32_t exec) {
  SimtEntry& top = frame.simt.back();
  uint32_t active = top.mask & ~warp.exitedMask;
  switch (in.op) {
    case Op::Bra: {
      uint32_t taken = exec, notTaken = active & ~exec;
      if (notTaken == 0) {
        top.pc = in.target;
      } else if (taken == 0) {
        ++top.pc;
      } else {
        uint32_t next = top.pc + 1, rp = in.reconverge;
        top.pc = rp;  // this entry waits at the reconvergence point for both paths
        if (next != rp) frame.simt.push_back({next, rp, notTaken});
        if (in.target != rp) frame.simt.push_back({in.target, rp, taken});
      }
      return true;
    }
    case Op::Call: {
      ++top.pc;  // the caller resumes after the call
      if (exec == 0) return true;
      if (exec != active && (in.flags & ptx::kUni))
        return fail(Fault::IllegalInstruction, warp, in, __builtin_ctz(exec),
                    "call.uni executed by a divergent warp (the compiler promised a uniform call)");
      enterCall(warp, in, exec);
      return true;
    }
    case Op::Ret:
    case Op::Exit: {
      if (in.op == Op::Exit || warp.frames.size() == 1) {
        warp.exitedMask |= exec;
        if ((warp.liveMask & ~warp.exitedMask) == 0) warp.done = true;
      } else {
        for (SimtEntry& e : frame.simt) e.mask &= ~exec;  // these lanes have returned
      }
      if (exec != active) ++top.pc;  // the lanes whose guard was false go on
      return true;
    }
    case Op::Trap:
      if (exec == 0) {
        ++top.pc;
        return true;
      }
      return fail(Fault::Trap, warp, in, __builtin_ctz(exec), "trap instruction executed");
    case Op::Brkpt:
      ++top.pc;
      return true;
    case Op::BarWarpSync:
      ++warp.syncEpoch;
      ++top.pc;
      return true;
    case Op::BarSync:
    case Op::BarArrive: {
      ++top.pc;
      if (exec == 0) return true;
      uint32_t live = warp.liveMask & ~warp.exitedMask;
      if (exec != live)
        return fail(Fault::IllegalInstruction, warp, in, __builtin_ctz(live & ~exec),
                    "barrier divergence: bar.sync reached by lanes 0x" + [&] {
                      char b[16];
                      std::snprintf(b, sizeof b, "%08x", exec);
                      return std::string(b);
                    }() + " of this warp, but not by the others, which would hang the block on hardware");
      if (warp.frames.size() > 1)
        return fail(Fault::IllegalInstruction, warp, in, __builtin_ctz(exec),
                    "bar.sync inside a called function is not supported by the simulator");
      if (in.op == Op::BarSync) warp.atBarrier = true;
      return true;
    }
    default:
      return fail(Fault::IllegalInstruction, warp, in, 0, "not a control instruction");
  }
}

void Executor::enterCall(Warp& warp, const ptx::Instr& in, uint32_t exec) {
  const ptx::Function& callee = module_.functions[in.target];
  Frame& caller = warp.frames.back();
  Frame frame;
  frame.fn = &callee;
  frame.regs.assign(size_t(callee.registers) * kWarpSize, 0);
  frame.paramStride = (callee.frameBytes + 7) / 8 * 8;
  frame.params.assign(size_t(frame.paramStride) * kWarpSize, 0);
  frame.localBase = caller.localBase + (caller.fn->localBytes + 15) / 16 * 16;
  frame.callSite = &in;
  frame.callMask = exec;
  // Arguments: the caller's .param variables, copied into the callee's parameters.
  size_t args = std::min<size_t>(in.nsrc, callee.params.size());
  for (size_t i = 0; i < args; ++i) {
    const Operand& arg = in.ops[in.ndst + i];
    const ptx::Param& p = callee.params[i];
    forLanes(exec, [&](int lane) { std::memcpy(frame.param(lane, p.offset), caller.param(lane, arg.imm), p.size); });
  }
  frame.simt.push_back({0, kNoReconvergence, exec});
  warp.frames.push_back(std::move(frame));
}

void Executor::leaveFrame(Warp& warp) {
  if (warp.frames.size() == 1) {  // the kernel's stack emptied: every lane has finished
    warp.done = true;
    return;
  }
  Frame callee = std::move(warp.frames.back());
  warp.frames.pop_back();
  Frame& caller = warp.frames.back();
  const ptx::Instr& call = *callee.callSite;
  uint32_t lanes = callee.callMask & ~warp.exitedMask;
  size_t rets = std::min<size_t>(call.ndst, callee.fn->returns.size());
  for (size_t i = 0; i < rets; ++i) {
    const ptx::Param& r = callee.fn->returns[i];
    forLanes(lanes, [&](int lane) { std::memcpy(caller.param(lane, call.ops[i].imm), callee.param(lane, r.offset), r.size); });
  }
}

uint64_t Executor::symbolAddress(const Frame& frame, const Operand& op) const {
  if (op.symbol == Operand::kParamSymbol) return op.imm;
  const ptx::Variable& v = module_.variables[op.symbol];
  switch (v.space) {
    case ptx::Space::Global:
    case ptx::Space::Const: return request_.module->variableAddress[op.symbol] + op.imm;
    case ptx::Space::Shared: return v.offset + op.imm;
    case ptx::Space::Local: return frame.localBase + v.offset + op.imm;
    default: return op.imm;
  }
}

uint64_t Executor::specialRegister(ptx::Special s, int lane) const {
  const Warp& warp = *currentWarp_;
  uint32_t t = warp.index * kWarpSize + lane;
  const Dim3& b = request_.block;
  using S = ptx::Special;
  switch (s) {
    case S::TidX: return t % b.x;
    case S::TidY: return (t / b.x) % b.y;
    case S::TidZ: return t / (b.x * b.y);
    case S::NtidX: return b.x;
    case S::NtidY: return b.y;
    case S::NtidZ: return b.z;
    case S::CtaidX: return ctaid_.x;
    case S::CtaidY: return ctaid_.y;
    case S::CtaidZ: return ctaid_.z;
    case S::NctaidX: return request_.grid.x;
    case S::NctaidY: return request_.grid.y;
    case S::NctaidZ: return request_.grid.z;
    case S::LaneId: return lane;
    case S::WarpId: return warp.index;
    case S::NWarpId: return 64;
    case S::SmId: return (ctaid_.x + ctaid_.y * request_.grid.x) % 132;
    case S::NSmId: return 132;
    case S::GridId: return 1;
    case S::LanemaskEq: return 1u << lane;
    case S::LanemaskLe: return lane == 31 ? ~0u : (2u << lane) - 1;
    case S::LanemaskLt: return (1u << lane) - 1;
    case S::LanemaskGe: return ~((1u << lane) - 1) & 0xFFFFFFFFu;
    case S::LanemaskGt: return lane == 31 ? 0 : ~((2u << lane) - 1) & 0xFFFFFFFFu;
    case S::Clock:
    case S::Clock64: return result_.stats.warpInstructions;
    case S::GlobalTimer:
      return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                       std::chrono::steady_clock::now().time_since_epoch())
                                       .count());
    case S::DynamicSmemSize: return request_.dynamicSharedBytes;
    case S::TotalSmemSize: return shared_.size();
  }
  return 0;
}

std::string Executor::where(const Warp& warp, const ptx::Instr& in, int lane) const {
  uint32_t t = warp.index * kWarpSize + lane;
  const Dim3& b = request_.block;
  const ptx::Function& fn = *warp.frames.back().fn;
  std::string s = "  kernel " + kernel_->name;
  if (&fn != kernel_) s += ", in function " + fn.name;
  s += ", PTX line " + std::to_string(in.line) + " (" + ptx::opName(in.op) + ")\n";
  s += "  block (" + std::to_string(ctaid_.x) + "," + std::to_string(ctaid_.y) + "," + std::to_string(ctaid_.z) +
       "), thread (" + std::to_string(t % b.x) + "," + std::to_string((t / b.x) % b.y) + "," +
       std::to_string(t / (b.x * b.y)) + "), warp " + std::to_string(warp.index) + " lane " + std::to_string(lane) + "\n";
  return s;
}

bool Executor::fail(Fault fault, const Warp& warp, const ptx::Instr& in, int lane, const std::string& what) {
  if (result_.fault != Fault::None) return false;  // the first fault is the one reported
  result_.fault = fault;
  result_.report = what + "\n" + where(warp, in, lane);
  return false;
}

}  // namespace gpusim
