// What the vendor-library stand-ins share: their exported entry points' linkage, the float formats
// they read and write in device memory (each library names them by its own enum), TF32 rounding,
// and the host views of device ranges.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

#include "gpusim/exec/float_format.h"
#include "gpusim/gpusim.h"

// An entry point of the library stood in for, with its C name (the stand-ins hide everything else).
#define STANDIN_EXPORT extern "C" __attribute__((visibility("default")))

namespace gpusim::standins {

enum class Element { None, F16, BF16, F32, F64 };

inline size_t bytesOf(Element e) {
  switch (e) {
    case Element::F16:
    case Element::BF16: return 2;
    case Element::F32: return 4;
    case Element::F64: return 8;
    default: return 0;
  }
}

// The element at `p` as a double (exact for every format).
inline double load(const uint8_t* p, Element e) {
  switch (e) {
    case Element::F16: { uint16_t b; std::memcpy(&b, p, 2); return half(b); }
    case Element::BF16: { uint16_t b; std::memcpy(&b, p, 2); return bfloat(b); }
    case Element::F32: { float v; std::memcpy(&v, p, 4); return v; }
    default: { double v; std::memcpy(&v, p, 8); return v; }
  }
}

// `v` rounded once (to nearest even) to the format, stored at `p`.
inline void store(uint8_t* p, Element e, double v) {
  switch (e) {
    case Element::F16:
    case Element::BF16: {
      auto b = static_cast<uint16_t>(roundToFormat(v, e == Element::F16 ? kHalf : kBFloat, ptx::Rounding::Rn));
      std::memcpy(p, &b, 2);
      return;
    }
    case Element::F32: { auto f = static_cast<float>(v); std::memcpy(p, &f, 4); return; }
    default: std::memcpy(p, &v, 8); return;
  }
}

// TF32: an f32 with its mantissa rounded to 10 bits (to nearest, ties away, as the tensor cores' conversion).
inline double tf32(double v) {
  uint32_t b = std::bit_cast<uint32_t>(static_cast<float>(v));
  if ((b & 0x7F800000u) != 0x7F800000u) b = (b + 0x1000u) & ~0x1FFFu;
  return std::bit_cast<float>(b);
}

// The host bytes of a device range (gpusimDeviceMemory), or null after a report naming `what`.
inline uint8_t* deviceBytes(int device, uint64_t address, size_t bytes, int access, const char* what) {
  return static_cast<uint8_t*>(gpusimDeviceMemory(device, address, bytes, access, what));
}

}  // namespace gpusim::standins
