// rowPrefetchFor: which inputs a CPU row kernel fetches a row ahead.
#include "codegen/row_prefetch.h"

#include <algorithm>

#include "ir/op_table.h"

namespace kiln::codegen {

std::optional<RowPrefetch> rowPrefetchFor(const KernelGroup& group) {
  if (group.kind != KernelKind::Row) return std::nullopt;
  Shape full = group.rows;
  full.insert(full.end(), group.inner.begin(), group.inner.end());
  auto inGroup = [&group](const Op* op) { return std::find(group.ops.begin(), group.ops.end(), op) != group.ops.end(); };
  RowPrefetch prefetch;
  size_t widest = 0;
  for (size_t i = 0; i < group.inputs.size(); ++i) {
    const Value* input = group.inputs[i];
    if (input->type().shape != full) continue;
    bool alongRows = std::all_of(input->uses().begin(), input->uses().end(), [&](const Use& use) {
      OpClass cls = use.user->info().cls;
      return !inGroup(use.user) || cls == OpClass::Elementwise || cls == OpClass::Reduction;
    });
    if (!alongRows) continue;
    prefetch.inputs.push_back(i);
    widest = std::max(widest, dtypeSize(input->type().dtype));
  }
  if (prefetch.inputs.empty() || group.rowLength() * static_cast<int64_t>(widest) < kMinPrefetchRowBytes) return std::nullopt;
  prefetch.blockElements = kPrefetchBlockBytes / static_cast<int64_t>(widest);
  return prefetch;
}

}  // namespace kiln::codegen
