// Data parallelism as a transformation: a function whose last results are gradients gets them
// averaged across replicas (`all_reduce` mean) before anything uses them, the way PyTorch DDP and
// Horovod do: gradients are packed into buckets of about `bucketBytes`, one all_reduce each.
#pragma once

#include <cstdint>

#include "ir/builder.h"
#include "ir/ir.h"

namespace kiln::passes {

struct GradientAverageOptions {
  int64_t bucketBytes = int64_t{25} << 20;  // PyTorch DDP's default bucket size
};

// Replaces results [first, end) of `f` by their mean across replicas. Gradients of one dtype are
// flattened and concatenated into buckets of about options.bucketBytes (a bigger gradient is a
// bucket of its own), each reduced by one all_reduce and split back. Buckets are filled from the
// last result backwards: backprop computes the last parameters' gradients first, so their
// reduction can start while earlier layers are still being differentiated.
Status averageGradientsAcrossReplicas(Function& f, size_t first, const GradientAverageOptions& options = {});

// The same for values being built: appends the bucketed all_reduces to `b` and returns the
// averaged gradients, in the order given (a training step calls it before its update).
std::vector<Value*> averageAcrossReplicas(GraphBuilder& b, const std::vector<Value*>& grads,
                                          const GradientAverageOptions& options = {});

}  // namespace kiln::passes
