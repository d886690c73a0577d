// Index helpers shared by converters (GatherElements, the losses). Internal to frontend/onnx.
#pragma once

#include "frontend/onnx/onnx_context.h"

namespace kiln::onnx_import {

// idx < 0 ? idx + n : idx.
Value* wrapNegative(NodeContext& c, Value* idx, int64_t n);
// ONNX GatherElements: out[p] = data[p with p_axis := idx[p]], idx of data's rank; `axis` >= 0.
Value* gatherAlongAxis(NodeContext& c, Value* data, Value* idx, int64_t axis);

}  // namespace kiln::onnx_import
