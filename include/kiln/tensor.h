// Tensor: a dense, row-major host buffer with a TensorType: inputs and results of compiled
// functions, constants, .npy data. Part of kiln's public API (docs/api.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kiln/types.h"

namespace kiln {

struct TensorView;

// Host memory for tensors and the CPU backend's arenas, 64-byte aligned (a cache line, an AVX-512
// vector: the CPU kernels' streaming stores need it; malloc gives 16), 256 from 256 bytes on (what
// the CPU backend's buffer plans assume of their arenas). Blocks of 1 MiB and more
// that are freed are kept, up to 1 GiB in all, and handed out again for the same size: a compiled
// function's results and arena, allocated again by every run, would otherwise come fresh from the
// operating system each time (glibc maps blocks over 32 MiB on their own), their pages faulted in
// and zeroed one by one: y = x + r over [4096,4096] f32 took 27 ms that way, 10 ms reusing memory.
void* allocateHostBytes(size_t bytes);
void releaseHostBytes(void* block, size_t bytes) noexcept;

// An allocator whose vectors leave new bytes as they are where value-initialisation would zero
// them: a tensor about to be overwritten whole (a kernel's result) skips a pass over its memory.
// Its memory comes from allocateHostBytes.
template <class T>
struct UninitializedAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = UninitializedAllocator<U>;
  };
  UninitializedAllocator() = default;
  template <class U>
  UninitializedAllocator(const UninitializedAllocator<U>&) noexcept {}
  T* allocate(size_t n) { return static_cast<T*>(allocateHostBytes(n * sizeof(T))); }
  void deallocate(T* p, size_t n) noexcept { releaseHostBytes(p, n * sizeof(T)); }
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

class Tensor {
 public:
  Tensor() = default;
  // Zero-filled tensor of the given type.
  explicit Tensor(TensorType type) : type_(std::move(type)), bytes_(type_.byteSize(), uint8_t{0}) {}
  // A tensor of the given type whose bytes are left unset, for one about to be overwritten whole
  // (a compiled function's results, copies): no pass over its memory to zero it first.
  static Tensor uninitialized(TensorType type) {
    Tensor t;
    t.type_ = std::move(type);
    t.bytes_.resize(t.type_.byteSize());
    return t;
  }

  const TensorType& type() const { return type_; }
  DType dtype() const { return type_.dtype; }
  const Shape& shape() const { return type_.shape; }
  int rank() const { return type_.rank(); }
  int64_t numElements() const { return type_.numElements(); }

  void* data() { return bytes_.data(); }
  const void* data() const { return bytes_.data(); }
  size_t byteSize() const { return bytes_.size(); }

  // Element i (row-major) widened to double, for any dtype (bool -> 0/1; ints above 2^53 lose bits).
  double getDouble(int64_t i) const;
  // Element i as an integer: ints exactly (u64 as its bits: values >= 2^63 read negative; see
  // intAsDouble and formatInt), floats truncated toward zero (NaN and out of range give 0).
  int64_t getInt(int64_t i) const;
  bool getBool(int64_t i) const { return getDouble(i) != 0.0; }
  // Stores v, rounding (f16/bf16/f32), truncating toward zero (ints) or testing != 0 (bool).
  void setDouble(int64_t i, double v);
  // Stores v exactly for 64-bit ints (u64 takes the bits), wrapping for narrower ints, converting
  // for floats.
  void setInt(int64_t i, int64_t v);

  // Bitwise equality of type and contents.
  bool operator==(const Tensor& o) const { return type_ == o.type_ && bytes_ == o.bytes_; }

  // Scalar tensors, for tests and builders.
  static Tensor scalar(DType t, double v);
  // A tensor of its own holding a copy of `view`'s elements (TensorView, below).
  static Tensor copyOf(const TensorView& view);

 private:
  template <class T>
  T load(int64_t i) const {
    T v;
    std::memcpy(&v, bytes_.data() + static_cast<size_t>(i) * sizeof(T), sizeof(T));
    return v;
  }
  template <class T>
  void store(int64_t i, T v) {
    std::memcpy(bytes_.data() + static_cast<size_t>(i) * sizeof(T), &v, sizeof(T));
  }

  TensorType type_;
  std::vector<uint8_t, UninitializedAllocator<uint8_t>> bytes_;
};

// A tensor in memory kiln does not own (a NumPy array's, a framework's): its type and its dense
// row-major bytes, which must stay alive and unchanged while a run reads them. Backends that can
// read inputs in place (the CPU) do, so nothing is copied.
struct TensorView {
  TensorView() = default;
  TensorView(TensorType type, const void* data) : type(std::move(type)), data(data) {}
  TensorView(const Tensor& t) : type(t.type()), data(t.data()) {}  // NOLINT: implicit, a Tensor is viewable

  size_t byteSize() const { return type.byteSize(); }

  TensorType type;
  const void* data = nullptr;
};

// Views of `tensors`, which must outlive them.
inline std::vector<TensorView> viewsOf(const std::vector<Tensor>& tensors) {
  return std::vector<TensorView>(tensors.begin(), tensors.end());
}

}  // namespace kiln
