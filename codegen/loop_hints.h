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
// The CPU target asks for it only for loops whose body computed an inline exp or tanh
// (CpuTarget::loopInterleave): on every loop, the extra code took MobileNetV2's compile from
// 0.45-0.49 to 0.72-1.10 s for no gain in its run.
int interleaveCount(int64_t trips, int lanes);

// Marks the loop whose latch branch is `latch` with a vector width (0: none; else also
// vectorize.enable, and no unrolling until the vectoriser has run: loop_hints.cpp says why) and an
// interleave count (0: none). Nothing where both are 0.
void setLoopHints(llvm::Instruction* latch, int width, int interleave);

// Marks the loop whose latch branch is `latch` never to be unrolled (llvm.loop.unroll.disable):
// for outer loops of a few constant trips around a big body, which LLVM's full unrolling copies
// whole (a generated matmul's blocks of columns and of K: 34 -> 89 ms of compile for one kernel).
void keepRolled(llvm::Instruction* latch);

}  // namespace kiln::codegen
