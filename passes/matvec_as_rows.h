// matvec-as-rows (CPU pipeline): a matrix times a vector, matmul(A[..., M, K], v[K]), is each row
// of A multiplied by v and summed: a row kernel, which streams A once at the machine's read
// bandwidth. oneDNN 2.6 runs such a product through its brgemm with N = 1 and leaves a third of
// that bandwidth unused: f32[4096,4096] x f32[4096] 2.0-2.1 ms, 1.4-1.6 as a row kernel, jax.jit
// 1.5 and torch's MKL gemv 1.3 (2-core Sapphire Rapids).
#pragma once

#include "passes/pass.h"

namespace kiln::passes {

// Rewrites each float matmul whose right operand is a vector (or a column [K, 1], reshaped to one
// and the result back) and whose left operand has two dims or more as
// `reduce_sum(mul(A, v), axes = [-1], accumulate = f32)`: summed in f32 lanes with one fma per
// product, as a BLAS gemv sums (f16 and bf16 operands cast to f32 first, where their products are
// exact, and the sums cast back; f64 summed in double). Widened to double, the rows were 3x slower
// where A stays in the caches (an RNN's W h in a loop); bf16 went to oneDNN, 2.5x slower than the
// rows (bf16[4096,4096] x [4096]: 1.6-1.9 ms, 0.7 as rows). Matrices times matrices, a vector times
// a matrix (a column reduction, where oneDNN packs a constant matrix once) and ints keep their
// matmul.
PassResult rewriteMatvecAsRows(Module& module, PassContext& context);

}  // namespace kiln::passes
