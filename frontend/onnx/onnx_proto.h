// The one place that includes libonnx-dev's generated protobuf classes (onnx::ModelProto, ...),
// so that only the importer's own files depend on them.
#pragma once

#include <onnx/onnx_pb.h>
