#include "ir/constant_data.h"

#include <algorithm>
#include <cstring>
#include <functional>

namespace kiln {

bool isSplat(const Tensor& t) {
  size_t size = dtypeSize(t.dtype());
  const auto* bytes = static_cast<const uint8_t*>(t.data());
  for (int64_t i = 1; i < t.numElements(); ++i)
    if (std::memcmp(bytes, bytes + static_cast<size_t>(i) * size, size) != 0) return false;
  return true;
}

bool isConstantData(const Op& op) {
  if (op.kind() != OpKind::Constant) return false;
  if (const Attr* data = op.findAttr("data"); data && data->getBool()) return true;
  const Tensor& t = op.attr("value").getDense();
  return t.numElements() > kMaxImmediateElements && !isSplat(t);
}

bool isConstantData(const Value* v) { return v->definingOp() && isConstantData(*v->definingOp()); }

const void* constantDataBytes(const Value* v) {
  return isConstantData(v) ? v->definingOp()->attr("value").getDense().data() : nullptr;
}

namespace {
// One 64-bit lane of mixing (the finaliser of SplitMix64): every input bit affects every output bit.
uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
}  // namespace

namespace {
// Four independent lanes over 32-byte blocks keep the multipliers busy; the type and length go in
// first, so equal bytes of different shapes hash apart.
struct Lanes {
  uint64_t v[4];
  explicit Lanes(const Tensor& t) : v{mix(std::hash<std::string>()(t.type().str())), mix(t.byteSize()), 0x9e3779b97f4a7c15ULL, 1} {}
  // The `bytes` (at most 32) at `p`, zero-padded to a block.
  void absorb(const uint8_t* p, size_t bytes) {
    uint64_t block[4] = {0, 0, 0, 0};
    if (bytes == 32)
      std::memcpy(block, p, 32);  // a constant size: one load per word
    else
      std::memcpy(block, p, bytes);
    for (int k = 0; k < 4; ++k) {
      v[k] = (v[k] ^ block[k]) * 0x9fb21c651e98df25ULL;
      v[k] ^= v[k] >> 29;
    }
  }
  uint64_t finish() const {
    uint64_t h = 0;
    for (uint64_t lane : v) h = mix(h ^ lane);
    return h;
  }
};
}  // namespace

uint64_t contentHash(const Tensor& t) {
  Lanes lanes(t);
  const auto* p = static_cast<const uint8_t*>(t.data());
  size_t n = t.byteSize();
  for (size_t i = 0; i < n; i += 32) lanes.absorb(p + i, std::min<size_t>(32, n - i));
  return lanes.finish();
}

uint64_t sampledContentHash(const Tensor& t) {
  constexpr size_t kSampledBlocks = 64, kBlock = 32;
  size_t n = t.byteSize();
  if (n <= kSampledBlocks * kBlock * 2) return contentHash(t);
  Lanes lanes(t);
  const auto* p = static_cast<const uint8_t*>(t.data());
  // Blocks spread evenly from the first byte to the last block, which ends at the last byte.
  for (size_t s = 0; s < kSampledBlocks; ++s) lanes.absorb(p + (n - kBlock) * s / (kSampledBlocks - 1), kBlock);
  return lanes.finish();
}

}  // namespace kiln
