// Constant data: which constants are weights (data the runtime keeps in a buffer made once per
// executable and passes to kernels) and which stay immediates inside the kernels that read them.
// The fusion pass, the kernel planner, the buffer plan, the runtimes and the printer all ask here,
// so they agree on every constant.
#pragma once

#include <cstdint>
#include <string>

#include "ir/ir.h"
#include "ir/tensor.h"

namespace kiln {

// A constant of at most this many elements may stay a table inside the kernels that read it.
inline constexpr int64_t kMaxImmediateElements = 16;

// Whether every element of `t` has the same bytes (true for an empty or one-element tensor).
bool isSplat(const Tensor& t);

// Whether `op` is a constant held as data: marked `{data = true}` (passes/share_kernels.h does, so
// that kernels equal but for a constant share their code), or not a splat and larger than
// kMaxImmediateElements. As XLA does with its constant literals, such a constant is never copied
// into a kernel: it becomes a buffer (host memory on the CPU, device memory uploaded once on CUDA)
// that kernels read as an argument, so a model's weights never pass through LLVM.
bool isConstantData(const Op& op);
// Whether `v` is the result of such a constant.
bool isConstantData(const Value* v);
// The bytes of constant data `v` (where the IR holds them, for the life of its module), or null
// when `v` is no constant data.
const void* constantDataBytes(const Value* v);

// A 64-bit hash of a tensor's type and bytes (fast: ~1 byte per cycle or better), for the compile
// cache's keys and the printer's summaries of large constants. Not cryptographic.
uint64_t contentHash(const Tensor& t);

// The same hash of a tensor's type and of a sample of its bytes: all of them up to 4 KiB, else 64
// blocks of 32 bytes spread evenly from the first byte to the last. Equal tensors hash equal;
// tensors that differ only outside the sample may collide. For cse's buckets, where a collision
// costs one full comparison: hashing every byte of BERT's 440 MB of weights took 89 of its 875 ms
// of compile.
uint64_t sampledContentHash(const Tensor& t);

}  // namespace kiln
