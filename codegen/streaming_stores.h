// Non-temporal ("streaming") stores for CPU kernel outputs too big to stay in the cores' caches.
// A plain store first reads its cache line from memory (read for ownership), so a kernel writing
// an output that ends up in memory anyway moves its bytes twice; a non-temporal store writes the
// line whole. On the 2-core sandbox, y = x * x + x over 16 MB: 1.72 ms with plain stores, 1.09
// with streaming ones, and still 1.62 against 1.94 ms with a second kernel reading y back at once;
// over 2 MB (within the L2 caches) the reader then waits on memory: 0.15 -> 0.26 ms. Outputs of
// at least twice the cores' L2 caches together stream.
//
// The loop vectoriser refuses a non-temporal store it cannot prove aligned to its whole width
// (x86 has aligned ones only; an unaligned one becomes eight 8-byte MOVNTIs), and kiln's loops
// start anywhere in a buffer. So the kernel emitter only names the output buffers that should
// stream (markStreamingOutputs); after the vectoriser, streamStores gives each vector store to one
// of them a run-time alignment check: aligned, a non-temporal store; else the plain one. Before the
// kernel returns, an sfence orders its streaming stores before whatever the runtime does next.
#pragma once

#include <cstdint>
#include <vector>

#include <llvm/IR/Function.h>
#include <llvm/IR/Module.h>

namespace kiln::codegen {

// Output bytes from which a CPU kernel's output streams: twice the L2 caches of all the host's
// cores (sysconf's L2 size, or 1 MiB per core where it says nothing).
int64_t streamingOutputBytes();

// Records on `kernel` (a CPU kernel's entry point, whose first argument is its buffer array) the
// buffers, by index, whose vector stores should stream.
void markStreamingOutputs(llvm::Function& kernel, const std::vector<int>& buffers);

// Rewrites the vector stores to the buffers markStreamingOutputs named, in every function of
// `module`, as above. Runs after the loop vectoriser (llvm_pipeline.cpp).
void streamStores(llvm::Module& module);

}  // namespace kiln::codegen
