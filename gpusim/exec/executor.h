// The interpreter's state for one launch and the functions that step it. A block's warps run in
// turn, each until it finishes or reaches a barrier; a warp executes one instruction for all its
// active lanes at a time. Divergence is handled by a SIMT stack per call frame: a divergent branch
// pushes its two paths, which run one after the other and meet again at the branch's immediate
// post-dominator (Instr::reconverge), where the full mask resumes.
//
// The implementation is split by concern: executor.cpp (the step loop, control flow, calls,
// barriers, fault reports), alu.cpp (arithmetic, logic, comparisons), convert.cpp (cvt, cvta),
// memory_access.cpp (ld/st/atom/red with memcheck, initcheck, racecheck and the sector and bank
// counters), collectives.cpp (shfl, vote, redux, match), launch.cpp (the grid and occupancy).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gpusim/exec/launch.h"
#include "gpusim/ptx/module.h"

namespace gpusim {

constexpr int kWarpSize = 32;

template <class F>
inline void forLanes(uint32_t mask, F&& f) {
  while (mask) {
    int lane = __builtin_ctz(mask);
    mask &= mask - 1;
    f(lane);
  }
}

// One entry of a frame's SIMT stack: lanes `mask` run from `pc` until they reach `rpc`.
struct SimtEntry {
  uint32_t pc;
  uint32_t rpc;
  uint32_t mask;
};
constexpr uint32_t kNoReconvergence = 0xFFFFFFFFu;

struct Frame {
  const ptx::Function* fn = nullptr;
  std::vector<uint64_t> regs;    // fn->registers slots x 32 lanes: regs[reg * 32 + lane]
  std::vector<uint8_t> params;   // the .param frame per lane: params[lane * paramStride + offset]
  uint32_t paramStride = 0;
  uint32_t localBase = 0;        // where this frame's .local variables start in a thread's local memory
  std::vector<SimtEntry> simt;
  const ptx::Instr* callSite = nullptr;  // the call that made this frame (nullptr for the kernel)
  uint32_t callMask = 0;                 // the lanes that made the call

  uint64_t& reg(uint32_t r, int lane) { return regs[size_t{r} * kWarpSize + lane]; }
  uint8_t* param(int lane, uint64_t offset) { return params.data() + size_t(lane) * paramStride + offset; }
};

struct Warp {
  uint32_t index = 0;       // in the block
  uint32_t liveMask = 0;    // lanes that are threads of the block
  uint32_t exitedMask = 0;  // lanes that executed exit/ret from the kernel
  uint32_t carry = 0;       // the .cc carry flag, a bit per lane
  uint32_t syncEpoch = 0;   // bar.warp.sync and barriers passed (racecheck)
  bool atBarrier = false;
  bool done = false;
  std::vector<Frame> frames;
};

// Racecheck's record of one 4-byte word of shared memory since the last barrier.
struct SharedWordRecord {
  uint32_t writer = 0;  // thread index + 1 of the last writer, 0 if none
  uint32_t writeEpoch = 0, writerWarpEpoch = 0;
  uint32_t reader = 0;  // thread index + 1 of the last reader
  uint32_t readEpoch = 0, readerWarpEpoch = 0;
};

// The bits a value of type `t` occupies in a register (Pred: 1).
inline uint64_t typeMask(ptx::Type t) {
  uint32_t bytes = ptx::typeBytes(t);
  if (t == ptx::Type::Pred) return 1;
  return bytes >= 8 || bytes == 0 ? ~0ull : (1ull << (8 * bytes)) - 1;
}

class Executor {
 public:
  Executor(const LaunchRequest& request, DeviceMemory& memory, const LaunchOptions& options, LaunchResult& result);
  // Runs block `ctaid`; false once the launch has faulted (result.fault set, report written).
  bool runBlock(Dim3 ctaid);

  const ptx::Function& kernel() const { return *kernel_; }
  uint32_t localBytesPerThread() const { return localPerThread_; }

 private:
  // executor.cpp
  void startWarp(Warp& warp, uint32_t index);
  bool runWarp(Warp& warp);  // until done, a barrier or a fault; false on fault
  bool step(Warp& warp);
  bool execControl(Warp& warp, Frame& frame, const ptx::Instr& in, uint32_t active);
  void enterCall(Warp& warp, const ptx::Instr& in, uint32_t active);
  void leaveFrame(Warp& warp);
  uint32_t guardMask(Frame& frame, const ptx::Instr& in, uint32_t active);
  // Records a fault for the first faulting lane and returns false.
  bool fail(Fault fault, const Warp& warp, const ptx::Instr& in, int lane, const std::string& what);
  std::string where(const Warp& warp, const ptx::Instr& in, int lane) const;

  // Operand access (inline below: every instruction's every lane goes through them).
  uint64_t read(Frame& frame, const ptx::Operand& op, int lane);
  void write(Frame& frame, const ptx::Operand& op, int lane, uint64_t value, ptx::Type type);
  uint64_t specialRegister(ptx::Special s, int lane) const;
  uint64_t symbolAddress(const Frame& frame, const ptx::Operand& op) const;

  // alu.cpp, convert.cpp
  bool execAlu(Warp& warp, Frame& frame, const ptx::Instr& in, uint32_t active);
  bool fastFloat(const ptx::Instr& in, Warp& warp, Frame& frame, uint32_t active);  // false: not its case
  bool execConvert(Warp& warp, Frame& frame, const ptx::Instr& in, uint32_t active);
  // memory_access.cpp
  bool execMemory(Warp& warp, Frame& frame, const ptx::Instr& in, uint32_t active);
  // collectives.cpp
  bool execCollective(Warp& warp, Frame& frame, const ptx::Instr& in, uint32_t active);

  // Where a lane's access of `bytes` bytes at `address` in `space` lands, in host memory, or nullptr
  // after reporting the fault (memory_access.cpp).
  uint8_t* translate(Warp& warp, Frame& frame, const ptx::Instr& in, int lane, ptx::Space space, uint64_t address,
                     uint32_t bytes, bool isWrite, ptx::Space* resolved);
  bool checkShared(Warp& warp, const ptx::Instr& in, int lane, uint64_t offset, uint32_t bytes, bool isWrite);

  const LaunchRequest& request_;
  DeviceMemory& memory_;
  const LaunchOptions& options_;
  LaunchResult& result_;
  const ptx::Module& module_;
  const ptx::Function* kernel_;
  uint32_t localPerThread_ = 0;
  uint32_t threadsPerBlock_ = 0;

  // The current block.
  Dim3 ctaid_;
  std::vector<Warp> warps_;
  std::vector<uint8_t> shared_;
  std::vector<SharedWordRecord> sharedRecords_;
  std::vector<uint8_t> local_;  // localPerThread_ bytes per thread
  uint32_t blockEpoch_ = 1;     // barriers passed + 1

  const Warp* currentWarp_ = nullptr;  // the warp being stepped (special registers, reports)

  // A one-entry cache of the last allocation hit, the common case for a warp's lanes.
  Allocation* lastAllocation_ = nullptr;
};

inline uint64_t Executor::read(Frame& frame, const ptx::Operand& op, int lane) {
  using Kind = ptx::Operand::Kind;
  switch (op.kind) {
    case Kind::Reg: {
      uint64_t v = frame.reg(op.reg, lane);
      return op.negate ? (v ^ 1) : v;
    }
    case Kind::Imm: return op.imm;
    case Kind::Special: return specialRegister(op.special, lane);
    case Kind::Addr:
      if (op.symbol != ptx::Operand::kNoSymbol) return symbolAddress(frame, op);
      return (op.reg != ptx::Operand::kNoReg ? frame.reg(op.reg, lane) : 0) + op.imm;
    default: return 0;
  }
}

inline void Executor::write(Frame& frame, const ptx::Operand& op, int lane, uint64_t value, ptx::Type type) {
  if (op.kind != ptx::Operand::Kind::Reg) return;  // a sink
  // A register wider than the instruction type receives the result sign-extended for signed
  // types and zero-extended otherwise (PTX ISA, "Operand Size Exceeding Instruction-Type Size"):
  // cvt.s8.s32 into a .b16 register leaves a 16-bit -1 that min.s16 reads as -1.
  const uint64_t mask = typeMask(type);
  uint64_t v = value & mask;
  bool isSigned = type == ptx::Type::S8 || type == ptx::Type::S16 || type == ptx::Type::S32;
  if (isSigned && (v & ~(mask >> 1))) v |= ~mask;
  frame.reg(op.reg, lane) = v;
}

}  // namespace gpusim
