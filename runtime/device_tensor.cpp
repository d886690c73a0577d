// DeviceTensor: device memory from the CUDA backend, or a clear error where it is not built.
#include "runtime/device_tensor.h"

#if KILN_HAVE_CUDA
#include "runtime/cuda/context.h"
#include "runtime/cuda/device_memory.h"
#include "runtime/cuda/driver.h"
#endif

namespace kiln {

#if KILN_HAVE_CUDA

namespace {

// A device tensor's memory on `device`: the buffer, freed when the last DeviceTensor sharing it
// goes (back to that GPU's allocator: each context has its own, and `device` is made current).
Expected<DeviceTensor> allocateOn(cuda::Device& device, const TensorType& type) {
  KILN_TRY(device.makeCurrent());
  auto buffer = cuda::allocateDevice(type.byteSize(), "a device tensor " + type.str());
  if (!buffer) return buffer.error();
  auto owner = std::make_shared<cuda::DeviceBuffer>(std::move(*buffer));
  CUdeviceptr address = owner->address();
  return DeviceTensor(type, address, std::move(owner));
}

Expected<DeviceTensor> uploadOn(cuda::Device& device, const Tensor& host) {
  auto t = allocateOn(device, host.type());
  if (!t) return t.error();
  auto stream = device.transferStream();
  if (!stream) return stream.error();
  KILN_TRY(cuda::copyToDevice(t->address(), host.data(), host.byteSize(), *stream));
  return t;
}

Expected<Tensor> downloadFrom(cuda::Device& device, const DeviceTensor& t) {
  Tensor host = Tensor::uninitialized(t.type());
  if (host.byteSize() == 0) return host;
  KILN_TRY(device.makeCurrent());
  auto stream = device.transferStream();
  if (!stream) return stream.error();
  KILN_TRY(cuda::copyToHost(host.data(), t.address(), host.byteSize(), *stream));
  return host;
}

}  // namespace

Expected<DeviceTensor> DeviceTensor::upload(const Tensor& host) {
  auto device = cuda::Device::get();
  if (!device) return device.error();
  return uploadOn(**device, host);
}

Expected<DeviceTensor> DeviceTensor::uninitialized(const TensorType& type) {
  auto device = cuda::Device::get();
  if (!device) return device.error();
  return allocateOn(**device, type);
}

Expected<DeviceTensor> DeviceTensor::zeros(const TensorType& type) {
  auto device = cuda::Device::get();
  if (!device) return device.error();
  auto t = allocateOn(**device, type);
  if (!t) return t.error();
  auto stream = (*device)->transferStream();
  if (!stream) return stream.error();
  if (type.byteSize()) {
    KILN_CU(cuMemsetD8Async, "a device tensor", t->address(), 0, type.byteSize(), *stream);
    KILN_CU(cuStreamSynchronize, "a device tensor", *stream);
  }
  return t;
}

Expected<Tensor> DeviceTensor::download() const {
  auto device = cuda::Device::get();
  if (!device) return device.error();
  return downloadFrom(**device, *this);
}

Expected<DeviceTensor> uninitializedOnGpu(int gpu, const TensorType& type) {
  auto device = cuda::Device::get(gpu);
  if (!device) return device.error();
  return allocateOn(**device, type);
}

Expected<DeviceTensor> uploadToGpu(int gpu, const Tensor& host) {
  auto device = cuda::Device::get(gpu);
  if (!device) return device.error();
  return uploadOn(**device, host);
}

Expected<Tensor> downloadFromGpu(int gpu, const DeviceTensor& t) {
  auto device = cuda::Device::get(gpu);
  if (!device) return device.error();
  return downloadFrom(**device, t);
}

Expected<DeviceTensor> copyToGpu(int to, const DeviceTensor& t, int from) {
  auto source = cuda::Device::get(from);
  if (!source) return source.error();
  auto destination = cuda::Device::get(to);  // current from here on
  if (!destination) return destination.error();
  auto copy = allocateOn(**destination, t.type());
  if (!copy) return copy.error();
  if (t.byteSize() == 0) return copy;
  auto stream = (*destination)->transferStream();
  if (!stream) return stream.error();
  KILN_CU(cuMemcpyPeerAsync, "a transfer from GPU " + std::to_string(from) + " to GPU " + std::to_string(to),
          copy->address(), (*destination)->context(), t.address(), (*source)->context(), t.byteSize(), *stream);
  KILN_CU(cuStreamSynchronize, "a transfer between GPUs", *stream);
  return copy;
}

#else

namespace {
Error notBuilt() {
  return Error("this kiln was built without the CUDA toolkit's headers, so it has no GPU backend; rebuild with the "
               "toolkit installed (CMake finds it in /usr/local/cuda or via CUDAToolkit_ROOT)");
}
}  // namespace

Expected<DeviceTensor> DeviceTensor::upload(const Tensor&) { return notBuilt(); }
Expected<DeviceTensor> DeviceTensor::zeros(const TensorType&) { return notBuilt(); }
Expected<DeviceTensor> DeviceTensor::uninitialized(const TensorType&) { return notBuilt(); }
Expected<Tensor> DeviceTensor::download() const { return notBuilt(); }
Expected<DeviceTensor> uninitializedOnGpu(int, const TensorType&) { return notBuilt(); }
Expected<DeviceTensor> uploadToGpu(int, const Tensor&) { return notBuilt(); }
Expected<Tensor> downloadFromGpu(int, const DeviceTensor&) { return notBuilt(); }
Expected<DeviceTensor> copyToGpu(int, const DeviceTensor&, int) { return notBuilt(); }

#endif

}  // namespace kiln
