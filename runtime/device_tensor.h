// Device tensors are part of the public API (include/kiln/device_tensor.h).
#pragma once

#include "kiln/device_tensor.h"

namespace kiln {

// Device tensors on a given GPU of the process (cuda::Device::get(gpu), made current on the
// calling thread), for functions placed across GPUs (runtime/stage_chain.h); the public ones use
// the GPU kiln runs on.
Expected<DeviceTensor> uninitializedOnGpu(int gpu, const TensorType& type);
Expected<DeviceTensor> uploadToGpu(int gpu, const Tensor& host);
Expected<Tensor> downloadFromGpu(int gpu, const DeviceTensor& t);
// A copy on GPU `to` of `t`, which lives on GPU `from`: one peer copy (cuMemcpyPeerAsync) on
// `to`'s transfer stream, waited for.
Expected<DeviceTensor> copyToGpu(int to, const DeviceTensor& t, int from);

}  // namespace kiln
