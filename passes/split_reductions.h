// split-reductions: a reduction that would leave a GPU idle becomes two (or more) stages, as XLA's
// tree reduction rewriter does. A kernel plans one thread per output of a column reduction and at
// most a block per row of a row reduction, so a full reduction (a loss mean, a gradient norm), a
// few very long rows, or a column sum over many rows would run on a handful of SMs. Splitting the
// reduced extent into chunks gives a first stage with enough outputs (or rows) to fill the device,
// and a small second stage that combines the chunks; each stage is an ordinary reduction that
// fusion plans as usual, deterministic like every kiln kernel.
//
//   reduce over a suffix of the axes, few rows:   x[R, N] -> [R, P, C] (padded) -> reduce 2 -> reduce 1
//   reduce over a prefix of the axes (columns):   x[N, K] -> [P, C, K] (padded) -> reduce 1 -> reduce 0
//   reduce over the last axes and outer ones:     the suffix first, then the rest (batch-norm statistics)
//
// Padding uses the reduction's identity (0 for sums, -inf for max, ...); integer max, min and
// product are split only where a chunk size divides the extent. Float sums, means and products
// accumulate the chunks in f64, so the result rounds once as the unsplit reduction's does.
#pragma once

#include "passes/pass.h"

namespace kiln::passes {

// The GPU pipeline's: sized for an H100-class GPU.
PassResult splitReductions(Module& module, PassContext& context);

// The CPU pipeline's (split-reductions-cpu): the CPU runs a row kernel's rows and a column
// reduction's 32-column tiles one per thread, so a reduction with fewer than 32 of them leaves
// cores idle: a full sum (one row), or a channels-last global pool [1,H,W,C] -> [1,1,1,C] with
// C <= 32 (one tile), which also splits over middle axes ([outer, n, inner] -> [outer, P, n/P,
// inner]). The first stage reads a shared operand as stored instead of recomputing it.
PassResult splitReductionsForCpu(Module& module, PassContext& context);

}  // namespace kiln::passes
