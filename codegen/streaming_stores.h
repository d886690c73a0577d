// Non-temporal ("streaming") stores for CPU kernel outputs too big to stay in the cores' caches.
// A plain store first reads its cache line from memory (read for ownership), so a kernel writing
// an output that ends up in memory anyway moves its bytes twice; a non-temporal store writes the
// line whole. On the 2-core sandbox, y = x * x + x over 16 MB: 1.72 ms with plain stores, 1.09
// with streaming ones, and still 1.62 against 1.94 ms with a second kernel reading y back at once;
// over 2 MB (within the L2 caches) the reader then waits on memory: 0.15 -> 0.26 ms. Nor does it
// pay where the kernel's buffers fit the last-level cache with room to spare: in a loop (each run
// of a step, each rep of a benchmark) they are still there, and a plain store hits it. On the same
// sandbox (32 MiB of L3; plain against streaming): x + 1 over 8 MiB 0.26 against 0.35 ms; x + 1
// over 16 MiB and a cast moving 24 MiB within noise of each other (0.61-0.70 and 0.44-0.52 either
// way, run to run); a strided slice moving 20 MiB 0.31 against 0.19. A broadcast, which only
// writes, keeps winning with plain stores up to the whole L3: to 16 MiB 0.27 against 0.67, to 24
// MiB 0.59 against 1.02, to 32 MiB 0.93 against 1.36. So an output streams when it is at least
// twice the cores' L2 caches together and its kernel moves more than half the last-level caches
// (all of them when it writes more than it reads).
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

// Whether a CPU kernel that reads `readBytes` (its inputs' sizes together) and writes
// `writtenBytes` (its outputs') writes an output of `outputBytes` with streaming stores: the
// output is at least streamingOutputBytes() and the kernel moves more than
// streamingKernelBytes(writtenBytes > readBytes).
bool streamsOutput(int64_t outputBytes, int64_t readBytes, int64_t writtenBytes);

// Twice the L2 caches of all the host's cores (host_caches.h): smaller outputs stay in the caches
// for whichever kernel reads them next.
int64_t streamingOutputBytes();

// What a kernel may move (inputs and outputs together) and still store as usual: half the host's
// last-level caches, or all of them for a kernel that writes more than it reads (a broadcast, a
// fill), whose inputs evict nothing (0 where the host does not say). Its buffers fit there, and
// they are still there when it runs again or the next kernel reads them, so plain stores hit the
// cache where streaming ones would go to memory.
int64_t streamingKernelBytes(bool writesMoreThanItReads);

// Records on `kernel` (a CPU kernel's entry point, whose first argument is its buffer array) the
// buffers, by index, whose vector stores should stream.
void markStreamingOutputs(llvm::Function& kernel, const std::vector<int>& buffers);

// Rewrites the vector stores to the buffers markStreamingOutputs named, in every function of
// `module`, as above. Runs after the loop vectoriser (llvm_pipeline.cpp).
void streamStores(llvm::Module& module);

}  // namespace kiln::codegen
