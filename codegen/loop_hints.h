// Hints to LLVM's loop vectoriser on the CPU's loops (llvm.loop metadata): how wide to make the
// vectors, and how many of them one iteration of the vectorised loop takes at once.
#pragma once

#include <llvm/IR/Instruction.h>

#include <cstdint>

namespace kiln::codegen {

// The interleave count for a loop of `trips` iterations widened to vectors of `lanes`: 4 or 2
// where that leaves no more scalar iterations after the vector loop than one vector per
// iteration would, else 0 (LLVM's own choice). Kiln's element loops hold long chains of
// dependent instructions (an exp or a tanh is ~25), and LLVM's cost model, counting registers,
// gives them one vector per iteration, so each iteration waits on its own chain; four
// independent vectors keep the FMA units busy: the elementwise chain with tanh over
// [4096,1024] f32 on a 2-core Zen 3 (AVX2), 1.83 -> 1.49 ms, softmax's exp-and-sum loop over
// [256,2048] on one thread 0.417 -> 0.384 ms (alternating binaries). Where the trip count leaves
// a remainder the vector loop does not take, it runs one element at a time, so interleaving
// stops where it would lengthen that remainder: rows of 144 f32 (EfficientNet's) get 2, not 4.
// Loops of fewer than 16 whole vectors get no hint (loop_hints.cpp says why).
// The CPU target asks for it only for loops whose body computed an inline exp, tanh or erf
// (CpuTarget::loopInterleave): on every loop, the extra code took MobileNetV2's compile from
// 0.45-0.49 to 0.72-1.10 s for no gain in its run.
int interleaveCount(int64_t trips, int lanes);

// Loops of at most this many constant trips LLVM may unroll whole before the loop vectoriser sees
// them, and it vectorises nothing of what is left: a row of 64 f32 summed as 64 dependent scalar
// double adds (a layer norm over f32[65536,64] 2.6-3.4 ms; kept rolled, 1.3 ms). Such a loop
// stays rolled until the vectoriser has run (setLoopHints' rolledUntilVectorised). Longer loops
// keep LLVM's own unrolling and interleaving, which unroll.disable would also turn off (a sum of
// f32[4096,1024] in 32 rows: 0.28 -> 0.51 ms, one chain of vector adds instead of four).
inline constexpr int64_t kMaxFullyUnrolledTrips = 256;

// The interleave count for such a short loop of `trips` widened to vectors of `lanes`: 4 or 2
// where that many divide its whole vectors, else 1. (With unroll.disable and no count, LLVM takes
// 1: one chain of dependent vector adds.)
int shortLoopInterleave(int64_t trips, int lanes);

// Marks the loop whose latch branch is `latch` with a vector width (0: none; else also
// vectorize.enable, and, where `rolledUntilVectorised`, no unrolling until the vectoriser has
// run) and an interleave count (0: none). Nothing where both are 0.
void setLoopHints(llvm::Instruction* latch, int width, int interleave, bool rolledUntilVectorised = false);

// Marks the loop whose latch branch is `latch` never to be unrolled (llvm.loop.unroll.disable):
// for outer loops of a few constant trips around a big body, which LLVM's full unrolling copies
// whole (a generated matmul's blocks of columns and of K: 34 -> 89 ms of compile for one kernel).
void keepRolled(llvm::Instruction* latch);

// Marks the loop whose latch branch is `latch` (keeping its hints) so that the vector loop the
// vectoriser makes of it is never unrolled: for the passes of a row kernel's blocks
// (row_prefetch.h), whose loops of a constant 1024 f32 become vector loops of 16 trips, which
// LLVM would then unroll whole in every pass for nothing but compile time.
void keepVectorLoopRolled(llvm::Instruction* latch);

}  // namespace kiln::codegen
