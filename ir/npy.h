// NumPy .npy files (format versions 1.0, 2.0 and 3.0; little-endian, C order) to and from Tensors.
//
// dtypes: bool '|b1', i8 '|i1', i32 '<i4', i64 '<i8', f16 '<f2', f32 '<f4', f64 '<f8'. NumPy has no
// bf16 of its own: kiln writes descr 'bfloat16', which np.load reads once ml_dtypes is imported.
#pragma once

#include <string>
#include <string_view>

#include "ir/status.h"
#include "ir/tensor.h"

namespace kiln {

// Decodes .npy bytes; `source` names them in errors (usually the path).
Expected<Tensor> decodeNpy(std::string_view bytes, const std::string& source);
// What .npy bytes hold, checked as decodeNpy checks them (the data's size included), without
// reading the data: its type and where it starts (for a memory-mapped file).
struct NpyLayout {
  TensorType type;
  size_t dataOffset = 0;
};
Expected<NpyLayout> parseNpy(std::string_view bytes, const std::string& source);
// NumPy stores any nonzero byte as True; kiln's bools are 0 or 1.
void normalizeBools(void* data, size_t bytes);
// Encodes as .npy (version 1.0, or 2.0 when the header needs it).
std::string encodeNpy(const Tensor& tensor);

Expected<Tensor> readNpy(const std::string& path);
// Writes atomically: a temporary file renamed into place, so readers never see half a file.
Status writeNpy(const std::string& path, const Tensor& tensor);

}  // namespace kiln
