// The table of ONNX op converters: op type -> a function that emits kiln ops for one node.
// Each ops_*.cpp file adds its family of ops. Internal to frontend/onnx.
#pragma once

#include <map>
#include <string>

#include "frontend/onnx/onnx_context.h"

namespace kiln::onnx_import {

// Emits the node's kiln ops and binds its outputs (ctx.setOutput); an error names the node.
using ConvertFn = Status (*)(NodeContext& ctx);
using ConverterTable = std::map<std::string, ConvertFn>;

// Every converter, by ONNX op type (default domain).
const ConverterTable& converters();

// x rounded half to even (std::nearbyint), in x's float dtype: floor, and a step up where the
// fraction is above 1/2, or exactly 1/2 with an odd floor (ops_elementwise.cpp; Round, GridSample).
Value* roundHalfToEven(NodeContext& c, Value* x);

// The families, one per file.
void addElementwiseConverters(ConverterTable& table);  // ops_elementwise.cpp: math, compare, logic
void addActivationConverters(ConverterTable& table);   // ops_activation.cpp
void addReductionConverters(ConverterTable& table);    // ops_reduction.cpp: Reduce*, ArgMax/Min
void addNormalizationConverters(ConverterTable& table);  // ops_normalization.cpp: softmax, layer norm, MVN
void addLinalgConverters(ConverterTable& table);       // ops_linalg.cpp: MatMul, Gemm, Det
void addEinsumConverters(ConverterTable& table);       // ops_einsum.cpp
void addLayoutConverters(ConverterTable& table);       // ops_layout.cpp: Reshape, Slice, Concat, ...
void addTensorConverters(ConverterTable& table);       // ops_tensor.cpp: Constant, Shape, Cast, Range, ...
void addIndexingConverters(ConverterTable& table);     // ops_indexing.cpp: GatherElements, OneHot, Trilu, ...
void addLossConverters(ConverterTable& table);         // ops_loss.cpp: NLL and softmax cross-entropy losses
void addScanConverters(ConverterTable& table);         // ops_scan.cpp: CumSum, ScatterElements, windows
void addResizeConverters(ConverterTable& table);       // ops_resize.cpp: Resize, Upsample
void addSamplingConverters(ConverterTable& table);     // ops_sampling.cpp: GridSample, RoiAlign
void addRecurrentConverters(ConverterTable& table);    // ops_recurrent.cpp: RNN, GRU, LSTM (unrolled)
void addNnConverters(ConverterTable& table);           // ops_nn.cpp: BatchNormalization, LRN, DepthToSpace, ...
void addConvConverters(ConverterTable& table);         // ops_conv.cpp: Conv, ConvTranspose
void addPoolConverters(ConverterTable& table);         // ops_pool.cpp: MaxPool, AveragePool, global pools, MaxUnpool

}  // namespace kiln::onnx_import
