// Loads, stores and atomics (executor.h): every lane's access is translated through its state space
// and checked (memcheck: bounds, freed memory, alignment, the space; initcheck: global bytes never
// written; racecheck: shared-memory hazards between barriers), and each warp-level request is
// counted as Nsight Compute counts it (32-byte sectors touched; shared-memory wavefronts).
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "gpusim/exec/executor.h"
#include "gpusim/exec/float_format.h"

namespace gpusim {

using ptx::Op;
using ptx::Space;
using ptx::Type;

namespace {

const char* spaceName(Space s) {
  switch (s) {
    case Space::Global: return "global";
    case Space::Shared: return "shared";
    case Space::Local: return "local";
    case Space::Param: return "param";
    case Space::Const: return "const";
    default: return "generic";
  }
}

bool isSignedType(Type t) { return t == Type::S8 || t == Type::S16 || t == Type::S32 || t == Type::S64; }

uint64_t loadValue(const uint8_t* p, uint32_t bytes, Type t) {
  uint64_t v = 0;
  std::memcpy(&v, p, bytes);
  if (isSignedType(t) && bytes < 8 && ((v >> (8 * bytes - 1)) & 1)) v |= ~((1ull << (8 * bytes)) - 1);
  return v;
}

// The new value of an atomic read-modify-write of `bytes` bytes.
uint64_t atomicApply(ptx::AtomOp op, Type t, uint64_t old, uint64_t b, uint64_t c, uint32_t bytes) {
  uint64_t mask = bytes >= 8 ? ~0ull : (1ull << (8 * bytes)) - 1;
  bool sgn = isSignedType(t);
  auto sx = [&](uint64_t v) { return bytes >= 8 ? int64_t(v) : int64_t(v << (64 - 8 * bytes)) >> (64 - 8 * bytes); };
  switch (op) {
    case ptx::AtomOp::Add:
      if (t == Type::F32) return bits(f32(old) + f32(b));
      if (t == Type::F64) return bits(f64(old) + f64(b));
      return (old + b) & mask;
    case ptx::AtomOp::Min:
      if (t == Type::F32) return bits(std::fmin(f32(old), f32(b)));
      if (t == Type::F64) return bits(std::fmin(f64(old), f64(b)));
      return (sgn ? (sx(b) < sx(old)) : ((b & mask) < (old & mask))) ? b & mask : old;
    case ptx::AtomOp::Max:
      if (t == Type::F32) return bits(std::fmax(f32(old), f32(b)));
      if (t == Type::F64) return bits(std::fmax(f64(old), f64(b)));
      return (sgn ? (sx(b) > sx(old)) : ((b & mask) > (old & mask))) ? b & mask : old;
    case ptx::AtomOp::Inc: return (old & mask) >= (b & mask) ? 0 : (old + 1) & mask;
    case ptx::AtomOp::Dec: return ((old & mask) == 0 || (old & mask) > (b & mask)) ? b & mask : (old - 1) & mask;
    case ptx::AtomOp::And: return old & b & mask;
    case ptx::AtomOp::Or: return (old | b) & mask;
    case ptx::AtomOp::Xor: return (old ^ b) & mask;
    case ptx::AtomOp::Exch: return b & mask;
    case ptx::AtomOp::Cas: return (old & mask) == (b & mask) ? c & mask : old;
    default: return old;
  }
}

// One atomic read-modify-write on host memory that other host threads (other streams' kernels)
// may touch at the same time; returns the old value.
uint64_t atomicUpdate(uint8_t* p, uint32_t bytes, ptx::AtomOp op, Type t, uint64_t b, uint64_t c) {
  if (bytes == 8) {
    auto* q = reinterpret_cast<uint64_t*>(p);
    uint64_t old = __atomic_load_n(q, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(q, &old, atomicApply(op, t, old, b, c, 8), false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
    }
    return old;
  }
  if (bytes == 4) {
    auto* q = reinterpret_cast<uint32_t*>(p);
    uint32_t old = __atomic_load_n(q, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(q, &old, static_cast<uint32_t>(atomicApply(op, t, old, b, c, 4)), false,
                                        __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
    }
    return old;
  }
  // 16-bit atomics (atom.cas.b16, atom.add.noftz.f16): no concurrent host access expected; plain.
  uint64_t old = 0;
  std::memcpy(&old, p, bytes);
  uint64_t v = atomicApply(op, t, old, b, c, bytes);
  std::memcpy(p, &v, bytes);
  return old;
}

// Counts the distinct 32-byte sectors of a request's lane accesses.
uint32_t distinctSectors(uint64_t* sectors, uint32_t n) {
  std::sort(sectors, sectors + n);
  return static_cast<uint32_t>(std::unique(sectors, sectors + n) - sectors);
}

}  // namespace

uint8_t* Executor::translate(Warp& warp, Frame& frame, const ptx::Instr& in, int lane, Space space, uint64_t address,
                             uint32_t bytes, bool isWrite, Space* resolved) {
  const char* verb = isWrite ? "write" : "read";
  if (space == Space::Generic) {
    if (address >= kSharedWindow && address < kSharedWindow + kWindowSize) space = Space::Shared, address -= kSharedWindow;
    else if (address >= kLocalWindow && address < kLocalWindow + kWindowSize) space = Space::Local, address -= kLocalWindow;
    else space = Space::Global;
  }
  *resolved = space;
  uint32_t align = std::min<uint32_t>(bytes, 16);
  if (address % align != 0) {
    fail(Fault::MisalignedAddress, warp, in, lane,
         std::string("memcheck: misaligned ") + spaceName(space) + " " + verb + " of " + std::to_string(bytes) +
             " bytes at " + hex(address) + " (needs " + std::to_string(align) + "-byte alignment)");
    return nullptr;
  }
  switch (space) {
    case Space::Global:
    case Space::Const: {
      Allocation* a = lastAllocation_;
      if (!a || a->freed.load(std::memory_order_relaxed) || !a->contains(address, bytes)) {
        a = memory_.find(address, bytes);
        if (!a) {
          fail(Fault::IllegalAddress, warp, in, lane,
               std::string("memcheck: invalid ") + spaceName(space) + " " + verb + " of " + std::to_string(bytes) +
                   " bytes: " + memory_.describe(address, bytes));
          return nullptr;
        }
        lastAllocation_ = a;
      }
      if (options_.initcheck && !isWrite && !a->isWritten(address, bytes)) {
        fail(Fault::CheckFailed, warp, in, lane,
             "initcheck: read of " + std::to_string(bytes) + " bytes of uninitialised global memory at " + hex(address) +
                 " (" + std::to_string(address - a->base) + " bytes into " + a->label + "): never written by a copy, " +
                 "memset or kernel");
        return nullptr;
      }
      if (isWrite) a->markWritten(address, bytes);
      return a->host(address);
    }
    case Space::Shared:
      if (address + bytes > shared_.size() || address + bytes < address) {
        fail(Fault::IllegalAddress, warp, in, lane,
             std::string("memcheck: invalid shared ") + verb + " of " + std::to_string(bytes) + " bytes at offset " +
                 std::to_string(address) + ": the block has " + std::to_string(shared_.size()) + " bytes of shared memory");
        return nullptr;
      }
      if (options_.racecheck && !checkShared(warp, in, lane, address, bytes, isWrite)) return nullptr;
      return shared_.data() + address;
    case Space::Local: {
      if (address + bytes > localPerThread_ || address + bytes < address) {
        fail(Fault::IllegalAddress, warp, in, lane,
             std::string("memcheck: invalid local ") + verb + " of " + std::to_string(bytes) + " bytes at offset " +
                 std::to_string(address) + ": a thread has " + std::to_string(localPerThread_) + " bytes of local memory");
        return nullptr;
      }
      size_t thread = size_t(warp.index) * kWarpSize + lane;
      return local_.data() + thread * localPerThread_ + address;
    }
    case Space::Param:
      if (address + bytes > frame.paramStride) {
        fail(Fault::IllegalAddress, warp, in, lane,
             std::string("memcheck: invalid param ") + verb + " of " + std::to_string(bytes) + " bytes at offset " +
                 std::to_string(address) + ": the parameter space has " + std::to_string(frame.paramStride) + " bytes");
        return nullptr;
      }
      return frame.param(lane, address);
    default:
      fail(Fault::InvalidAddressSpace, warp, in, lane, "access in an unknown state space");
      return nullptr;
  }
}

bool Executor::checkShared(Warp& warp, const ptx::Instr& in, int lane, uint64_t offset, uint32_t bytes, bool isWrite) {
  uint32_t thread = warp.index * kWarpSize + lane + 1;
  for (uint64_t word = offset / 4; word <= (offset + bytes - 1) / 4; ++word) {
    SharedWordRecord& r = sharedRecords_[word];
    // Two threads' accesses conflict unless a barrier lies between them, or they are lanes of one
    // warp with a bar.warp.sync between them.
    auto ordered = [&](uint32_t other, uint32_t epoch, uint32_t warpEpoch) {
      if (other == 0 || other == thread || epoch != blockEpoch_) return true;
      return (other - 1) / kWarpSize == warp.index && warpEpoch != warp.syncEpoch;
    };
    const char* hazard = nullptr;
    uint32_t other = 0;
    if (!ordered(r.writer, r.writeEpoch, r.writerWarpEpoch)) hazard = isWrite ? "write-after-write" : "read-after-write", other = r.writer;
    else if (isWrite && !ordered(r.reader, r.readEpoch, r.readerWarpEpoch)) hazard = "write-after-read", other = r.reader;
    if (hazard) {
      const Dim3& b = request_.block;
      uint32_t o = other - 1;
      return fail(Fault::CheckFailed, warp, in, lane,
                  std::string("racecheck: ") + hazard + " hazard on shared memory at offset " + std::to_string(word * 4) +
                      " with thread (" + std::to_string(o % b.x) + "," + std::to_string((o / b.x) % b.y) + "," +
                      std::to_string(o / (b.x * b.y)) + ") of the same block, with no barrier between them");
    }
    if (isWrite) r.writer = thread, r.writeEpoch = blockEpoch_, r.writerWarpEpoch = warp.syncEpoch;
    else r.reader = thread, r.readEpoch = blockEpoch_, r.readerWarpEpoch = warp.syncEpoch;
  }
  return true;
}

bool Executor::execMemory(Warp& warp, Frame& frame, const ptx::Instr& in, uint32_t exec) {
  switch (in.op) {
    case Op::Membar: case Op::Fence: case Op::Prefetch:
      return true;  // one interpreter thread executes a block in order: every access is already visible
    default: break;
  }
  const auto& ops = in.ops;
  const uint32_t elementBytes = ptx::typeBytes(in.type);
  const bool isLoad = in.op == Op::Ld || in.op == Op::Ldu;
  const bool isStore = in.op == Op::St;
  const bool isAtomic = in.op == Op::Atom || in.op == Op::Red;
  const uint32_t bytes = elementBytes * (isAtomic ? 1 : in.vec);
  const ptx::Operand& addressOp = isLoad ? ops[1] : isStore ? ops[0] : (in.op == Op::Atom ? ops[1] : ops[0]);

  uint64_t sectors[kWarpSize * 2];
  uint32_t sectorCount = 0, lanes = 0;
  uint64_t sharedWords[kWarpSize * 4];
  uint32_t sharedWordCount = 0;
  bool anyGlobal = false, anyShared = false;
  bool ok = true;
  forLanes(exec, [&](int lane) {
    if (!ok) return;
    uint64_t address = read(frame, addressOp, lane);
    if (addressOp.symbol != ptx::Operand::kNoSymbol && addressOp.symbol != ptx::Operand::kParamSymbol &&
        in.space == Space::Generic) {
      // A variable named directly in a generic access: its own space's address, made generic.
      Space vs = module_.variables[addressOp.symbol].space;
      if (vs == Space::Shared) address += kSharedWindow;
      else if (vs == Space::Local) address += kLocalWindow;
    }
    Space resolved;
    uint8_t* p = translate(warp, frame, in, lane, in.space, address, bytes, !isLoad, &resolved);
    if (!p) {
      ok = false;
      return;
    }
    if (resolved == Space::Global || resolved == Space::Const) {
      anyGlobal = true;
      for (uint64_t s = address / 32; s <= (address + bytes - 1) / 32 && sectorCount < kWarpSize * 2; ++s) sectors[sectorCount++] = s;
      ++lanes;
    } else if (resolved == Space::Shared) {
      anyShared = true;
      for (uint64_t w = address / 4; w <= (address + bytes - 1) / 4 && sharedWordCount < kWarpSize * 4; ++w)
        sharedWords[sharedWordCount++] = w;
      ++lanes;
    }
    if (isLoad) {
      const ptx::Operand& d = ops[0];
      if (d.kind == ptx::Operand::Kind::Vec) {
        for (int i = 0; i < d.count; ++i)
          if (d.vec[i] != ptx::Operand::kNoReg) frame.reg(d.vec[i], lane) = loadValue(p + i * elementBytes, elementBytes, in.type);
      } else if (d.kind == ptx::Operand::Kind::Reg) {
        frame.reg(d.reg, lane) = loadValue(p, elementBytes, in.type);
      }
    } else if (isStore) {
      const ptx::Operand& v = ops[1];
      if (v.kind == ptx::Operand::Kind::Vec) {
        for (int i = 0; i < v.count; ++i) {
          uint64_t x = frame.reg(v.vec[i], lane);
          std::memcpy(p + i * elementBytes, &x, elementBytes);
        }
      } else {
        uint64_t x = read(frame, v, lane);
        std::memcpy(p, &x, elementBytes);
      }
    } else {
      int first = in.op == Op::Atom ? 2 : 1;
      uint64_t b = read(frame, ops[first], lane);
      uint64_t c = in.atomOp == ptx::AtomOp::Cas ? read(frame, ops[first + 1], lane) : 0;
      uint64_t old = atomicUpdate(p, elementBytes, in.atomOp, in.type, b, c);
      if (in.op == Op::Atom) write(frame, ops[0], lane, old, in.type);
    }
  });
  if (!ok) return false;

  KernelStats& s = result_.stats;
  if (anyGlobal) {
    uint32_t distinct = distinctSectors(sectors, sectorCount);
    uint64_t asked = uint64_t(lanes) * bytes;
    if (isAtomic) {
      ++s.atomicRequests;
    } else if (isLoad) {
      ++s.globalLoadRequests, s.globalLoadSectors += distinct, s.globalLoadBytes += asked;
    } else {
      ++s.globalStoreRequests, s.globalStoreSectors += distinct, s.globalStoreBytes += asked;
    }
  }
  if (anyShared) {
    // Wavefronts: the most distinct words one bank serves, and at least one per 128 distinct bytes
    // moved (lanes reading the same word share it: a broadcast of one 64-bit value is one wavefront,
    // 32 lanes reading 32 different 64-bit values are two).
    std::sort(sharedWords, sharedWords + sharedWordCount);
    uint32_t n = static_cast<uint32_t>(std::unique(sharedWords, sharedWords + sharedWordCount) - sharedWords);
    uint32_t perBank[32] = {};
    uint32_t worst = 0;
    for (uint32_t i = 0; i < n; ++i) worst = std::max(worst, ++perBank[sharedWords[i] % 32]);
    uint32_t byBytes = (n * 4 + 127) / 128;
    ++s.sharedRequests;
    s.sharedWavefronts += std::max(worst, std::max<uint32_t>(byBytes, 1));
  }
  return true;
}

}  // namespace gpusim
