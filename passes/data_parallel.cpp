// averageGradientsAcrossReplicas: buckets of flattened gradients, one all_reduce (mean) each.
#include "passes/data_parallel.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "ir/builder.h"

namespace kiln::passes {

namespace {

// One all_reduce over several gradients: flattened, concatenated, reduced, split and reshaped back.
std::vector<Value*> reduceBucket(GraphBuilder& b, const std::vector<Value*>& grads) {
  auto mean = [&](Value* v) { return b.op(OpKind::AllReduce, {v}, {{"reduce", Attr("mean")}}); };
  auto reshape = [&](Value* v, const Shape& shape) {
    return v->type().shape == shape ? v : b.op(OpKind::Reshape, {v}, {{"shape", Attr::ints(shape)}});
  };
  if (grads.size() == 1) return {mean(grads[0])};
  std::vector<Value*> flat;
  for (Value* g : grads) flat.push_back(reshape(g, {g->type().numElements()}));
  Value* reduced = mean(b.op(OpKind::Concat, flat, {{"axis", Attr(int64_t{0})}}));
  std::vector<Value*> out;
  int64_t offset = 0;
  for (Value* g : grads) {
    int64_t n = g->type().numElements();
    Value* part = b.op(OpKind::Slice, {reduced}, {{"starts", Attr::ints({offset})}, {"ends", Attr::ints({offset + n})}});
    out.push_back(reshape(part, g->type().shape));
    offset += n;
  }
  return out;
}

}  // namespace

std::vector<Value*> averageAcrossReplicas(GraphBuilder& b, const std::vector<Value*>& grads,
                                          const GradientAverageOptions& options) {
  std::vector<Value*> results = grads;
  // Open bucket per dtype, filled from the last gradient backwards.
  struct Bucket {
    std::vector<size_t> members;
    int64_t bytes = 0;
  };
  std::map<DType, Bucket> open;
  auto flush = [&](Bucket& bucket) {
    if (bucket.members.empty()) return;
    std::vector<Value*> members;
    for (size_t i : bucket.members) members.push_back(results[i]);
    std::vector<Value*> reduced = reduceBucket(b, members);
    for (size_t k = 0; k < reduced.size(); ++k) results[bucket.members[k]] = reduced[k];
    bucket = {};
  };
  for (size_t i = results.size(); i-- > 0;) {
    if (!results[i]) continue;  // the builder's deferred error
    Bucket& bucket = open[results[i]->type().dtype];
    int64_t bytes = static_cast<int64_t>(results[i]->type().byteSize());
    if (!bucket.members.empty() && bucket.bytes + bytes > options.bucketBytes) flush(bucket);
    bucket.members.push_back(i);
    bucket.bytes += bytes;
  }
  for (auto& [dtype, bucket] : open) flush(bucket);
  return results;
}

Status averageGradientsAcrossReplicas(Function& f, size_t first, const GradientAverageOptions& options) {
  Op* ret = f.body().terminator();
  KILN_INTERNAL_CHECK(ret && first <= ret->numOperands(), "averageGradientsAcrossReplicas: no such results");
  std::vector<Value*> results = ret->operands();
  for (size_t i = first; i < results.size(); ++i)
    if (!isFloat(results[i]->type().dtype))
      return Error(fmt::format("data parallelism: result {} of @{} is {}, not a float gradient", i, f.name(),
                               results[i]->type().str()));
  f.body().erase(ret);
  GraphBuilder b(f);
  std::vector<Value*> grads(results.begin() + static_cast<ptrdiff_t>(first), results.end());
  std::vector<Value*> averaged = averageAcrossReplicas(b, grads, options);
  std::copy(averaged.begin(), averaged.end(), results.begin() + static_cast<ptrdiff_t>(first));
  b.setLoc(f.loc());
  return b.finish(results).status();
}

}  // namespace kiln::passes
