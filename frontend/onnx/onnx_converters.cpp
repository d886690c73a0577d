// The converter table, assembled once from the per-family files.
#include "frontend/onnx/onnx_converters.h"

namespace kiln::onnx_import {

const ConverterTable& converters() {
  static const ConverterTable table = [] {
    ConverterTable t;
    addElementwiseConverters(t);
    addActivationConverters(t);
    addReductionConverters(t);
    addNormalizationConverters(t);
    addLinalgConverters(t);
    addEinsumConverters(t);
    addLayoutConverters(t);
    addTensorConverters(t);
    addIndexingConverters(t);
    addLossConverters(t);
    addNnConverters(t);
    addConvConverters(t);
    addPoolConverters(t);
    addScanConverters(t);
    addResizeConverters(t);
    addSamplingConverters(t);
    addRecurrentConverters(t);
    return t;
  }();
  return table;
}

}  // namespace kiln::onnx_import
