// kiln's public C++ API in one header: graphs (parse, import ONNX, build), compiling and running
// them, training steps, host and device tensors, errors as values. docs/api.md is the tour.
// Everything else kiln's sources hold is internal and may change.
#pragma once

#include "kiln/backend.h"
#include "kiln/compile.h"
#include "kiln/device_tensor.h"
#include "kiln/graph.h"
#include "kiln/status.h"
#include "kiln/tensor.h"
#include "kiln/train.h"
#include "kiln/types.h"
#include "kiln/version.h"
