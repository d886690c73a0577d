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

// A device tensor's memory: the buffer, freed when the last DeviceTensor sharing it goes.
Expected<DeviceTensor> allocateTensor(const TensorType& type, cuda::Device*& device) {
  auto d = cuda::Device::get();
  if (!d) return d.error();
  device = *d;
  auto buffer = cuda::allocateDevice(type.byteSize(), "a device tensor " + type.str());
  if (!buffer) return buffer.error();
  auto owner = std::make_shared<cuda::DeviceBuffer>(std::move(*buffer));
  CUdeviceptr address = owner->address();
  return DeviceTensor(type, address, std::move(owner));
}

}  // namespace

Expected<DeviceTensor> DeviceTensor::upload(const Tensor& host) {
  cuda::Device* device = nullptr;
  auto t = allocateTensor(host.type(), device);
  if (!t) return t.error();
  auto stream = device->transferStream();
  if (!stream) return stream.error();
  KILN_TRY(cuda::copyToDevice(t->address(), host.data(), host.byteSize(), *stream));
  return t;
}

Expected<DeviceTensor> DeviceTensor::uninitialized(const TensorType& type) {
  cuda::Device* device = nullptr;
  return allocateTensor(type, device);
}

Expected<DeviceTensor> DeviceTensor::zeros(const TensorType& type) {
  cuda::Device* device = nullptr;
  auto t = allocateTensor(type, device);
  if (!t) return t.error();
  auto stream = device->transferStream();
  if (!stream) return stream.error();
  if (type.byteSize()) {
    KILN_CU(cuMemsetD8Async, "a device tensor", t->address(), 0, type.byteSize(), *stream);
    KILN_CU(cuStreamSynchronize, "a device tensor", *stream);
  }
  return t;
}

Expected<Tensor> DeviceTensor::download() const {
  Tensor host(type_);
  if (host.byteSize() == 0) return host;
  auto device = cuda::Device::get();
  if (!device) return device.error();
  auto stream = (*device)->transferStream();
  if (!stream) return stream.error();
  KILN_TRY(cuda::copyToHost(host.data(), address_, host.byteSize(), *stream));
  return host;
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

#endif

}  // namespace kiln
