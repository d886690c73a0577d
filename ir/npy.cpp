// NumPy .npy files to and from Tensors: header parsing and validation, NumPy's exact header layout, atomic writes.
//
// Format (numpy/lib/format.py): the magic "\x93NUMPY", a major and a minor version byte, the header length
// (2 bytes little-endian in 1.0, 4 bytes in 2.0 and 3.0), then the header: a Python dict literal
// {'descr': ..., 'fortran_order': ..., 'shape': (...), } padded with spaces and a final '\n' so the data
// starts on a 64-byte boundary. The data follows, row-major for fortran_order False.
#include "ir/npy.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <cerrno>
#include <cstring>
#include <optional>
#include <vector>

#include "ir/py_literal.h"

namespace kiln {

// Tensors hold little-endian bytes and .npy data is copied as is; '=' (native) in a descr means little-endian.
static_assert(std::endian::native == std::endian::little, "kiln's .npy I/O assumes a little-endian host");

namespace {

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr size_t kArrayAlign = 64;           // numpy.lib.format.ARRAY_ALIGN
constexpr size_t kGrowthAxisMaxDigits = 21;  // numpy.lib.format.GROWTH_AXIS_MAX_DIGITS
constexpr std::string_view kSupported =
    "bool '|b1', i8 '|i1', i16 '<i2', i32 '<i4', i64 '<i8', u8 '|u1', u16 '<u2', u32 '<u4', u64 '<u8', "
    "f16 '<f2', bf16 'bfloat16', f32 '<f4', f64 '<f8'";

// The descr kiln writes for each dtype (as NumPy does; bf16 as ml_dtypes names it).
std::string_view npyDescr(DType t) {
  switch (t) {
    case DType::Bool: return "|b1";
    case DType::I8: return "|i1";
    case DType::I16: return "<i2";
    case DType::I32: return "<i4";
    case DType::I64: return "<i8";
    case DType::U8: return "|u1";
    case DType::U16: return "<u2";
    case DType::U32: return "<u4";
    case DType::U64: return "<u8";
    case DType::F16: return "<f2";
    case DType::BF16: return "bfloat16";
    case DType::F32: return "<f4";
    case DType::F64: return "<f8";
  }
  internalError(__FILE__, __LINE__, "bad dtype");
}

// The header's fields, checked.
struct Header {
  DType dtype = DType::F32;
  std::string descr;
  Shape shape;
  int64_t dataBytes = 0;
};

// The dtype for a descr string; nullopt with `why` set when kiln cannot read it.
std::optional<DType> dtypeFromDescr(const std::string& descr, std::string& why) {
  if (descr == "bfloat16") return DType::BF16;
  char order = '=';
  std::string_view code = descr;
  if (!code.empty() && (code[0] == '<' || code[0] == '>' || code[0] == '|' || code[0] == '=')) {
    order = code[0];
    code.remove_prefix(1);
  }
  struct Code {
    std::string_view code;
    DType type;
  };
  static constexpr Code kCodes[] = {{"b1", DType::Bool}, {"i1", DType::I8},  {"i2", DType::I16}, {"i4", DType::I32},
                                    {"i8", DType::I64},  {"u1", DType::U8},  {"u2", DType::U16}, {"u4", DType::U32},
                                    {"u8", DType::U64},  {"f2", DType::F16}, {"f4", DType::F32}, {"f8", DType::F64}};
  for (const Code& c : kCodes) {
    if (c.code != code) continue;
    if (order == '>' && dtypeSize(c.type) > 1) {
      why = "big-endian data (descr " + pyQuote(descr) + ") is not supported; convert with arr.astype('<" +
            std::string(code) + "')";
      return std::nullopt;
    }
    return c.type;
  }
  if (code == "V2") {
    why = "descr " + pyQuote(descr) +
          " is raw 2-byte data (NumPy saves ml_dtypes.bfloat16 arrays this way) and kiln cannot tell what it holds; "
          "save bfloat16 data with kiln, or as float32 (arr.astype('<f4')) and cast it";
    return std::nullopt;
  }
  why = "unsupported dtype " + pyQuote(descr) + "; kiln reads " + std::string(kSupported);
  return std::nullopt;
}

// Checks the parsed dict; on failure returns the message (without the source).
std::optional<std::string> validateHeader(const PyValue& dict, Header& out) {
  if (dict.kind != PyValue::Kind::Dict) return "the header is not a dict: " + pyRepr(dict);
  const PyValue* descr = nullptr;
  const PyValue* fortran = nullptr;
  const PyValue* shape = nullptr;
  for (size_t k = 0; k + 1 < dict.items.size(); k += 2) {
    const PyValue& key = dict.items[k];
    const PyValue* value = &dict.items[k + 1];
    const PyValue** slot = nullptr;
    if (key.kind == PyValue::Kind::Str && key.text == "descr") slot = &descr;
    if (key.kind == PyValue::Kind::Str && key.text == "fortran_order") slot = &fortran;
    if (key.kind == PyValue::Kind::Str && key.text == "shape") slot = &shape;
    if (!slot)
      return "unexpected key " + pyRepr(key) + " in the header (it has exactly 'descr', 'fortran_order' and 'shape')";
    if (*slot) return "duplicate key " + pyRepr(key) + " in the header";
    *slot = value;
  }
  if (!descr) return std::string("the header has no 'descr' key");
  if (!fortran) return std::string("the header has no 'fortran_order' key");
  if (!shape) return std::string("the header has no 'shape' key");

  if (descr->kind == PyValue::Kind::List) return "structured dtypes (descr " + pyRepr(*descr) + ") are not supported";
  if (descr->kind != PyValue::Kind::Str) return "'descr' must be a string, got " + pyRepr(*descr);
  std::string why;
  std::optional<DType> dtype = dtypeFromDescr(descr->text, why);
  if (!dtype) return why;
  out.dtype = *dtype;
  out.descr = descr->text;

  if (fortran->kind != PyValue::Kind::Bool) return "'fortran_order' must be True or False, got " + pyRepr(*fortran);

  if (shape->kind != PyValue::Kind::Tuple) {
    std::string hint = shape->kind == PyValue::Kind::Int ? " (a 1-D shape is written (" + shape->text + ",))" : "";
    return "'shape' must be a tuple of ints, got " + pyRepr(*shape) + hint;
  }
  out.shape.clear();
  int64_t elements = 1;
  for (const PyValue& d : shape->items) {
    if (d.kind != PyValue::Kind::Int) return "'shape' must be a tuple of ints, got " + pyRepr(*shape);
    if (d.overflow) return "dimension " + d.text + " in shape " + pyRepr(*shape) + " is out of range";
    if (d.i < 0) return "negative dimension " + d.text + " in shape " + pyRepr(*shape);
    if (__builtin_mul_overflow(elements, d.i, &elements))
      return "shape " + pyRepr(*shape) + " has too many elements";
    out.shape.push_back(d.i);
  }
  if (__builtin_mul_overflow(elements, static_cast<int64_t>(dtypeSize(out.dtype)), &out.dataBytes))
    return "shape " + pyRepr(*shape) + " has too many elements";

  // Fortran and C order lay the data out alike when at most one dimension exceeds 1.
  int bigDims = 0;
  for (int64_t d : out.shape) bigDims += d > 1;
  if (fortran->b && bigDims > 1 && elements > 0)
    return "Fortran-order arrays are not supported; save np.ascontiguousarray(arr)";
  return std::nullopt;
}

std::string shapeRepr(const Shape& s) {
  std::string out = "(";
  for (size_t k = 0; k < s.size(); ++k) out += (k ? ", " : "") + std::to_string(s[k]);
  if (s.size() == 1) out += ",";
  return out + ")";
}

// A printable excerpt of the header for messages: all of it when short, else a window around `at`.
std::string excerpt(std::string_view header, size_t at) {
  while (!header.empty() && (header.back() == ' ' || header.back() == '\n')) header.remove_suffix(1);
  constexpr size_t kMax = 120, kBefore = 80;
  if (header.size() <= kMax) return pyQuote(header);
  size_t start = std::min(at > kBefore ? at - kBefore : 0, header.size() - kMax);
  return (start ? "..." : "") + pyQuote(header.substr(start, kMax)) + (start + kMax < header.size() ? "..." : "");
}

uint32_t readLittleEndian(std::string_view bytes, size_t at, size_t width) {
  uint32_t v = 0;
  for (size_t k = 0; k < width; ++k) v |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[at + k])) << (8 * k);
  return v;
}

std::string errnoText(int err) { return std::strerror(err); }

}  // namespace

Expected<NpyLayout> parseNpy(std::string_view bytes, const std::string& source) {
  const std::string src = source.empty() ? "<npy data>" : source;
  auto error = [&](const std::string& what) { return Error(src + ": " + what); };

  if (bytes.empty()) return error("empty file, not a .npy file");
  if (bytes.substr(0, 4) == std::string_view("PK\x03\x04", 4))
    return error("this is a zip archive (an .npz file?), not a .npy file; save single arrays with np.save");
  if (bytes.substr(0, kMagic.size()) != kMagic.substr(0, std::min(bytes.size(), kMagic.size())))
    return error("not a .npy file (it does not start with the magic string \"\\x93NUMPY\")");
  if (bytes.size() < kMagic.size() + 2)
    return error("truncated .npy file: it ends after " + std::to_string(bytes.size()) + " bytes, before the header");
  int major = static_cast<unsigned char>(bytes[6]);
  int minor = static_cast<unsigned char>(bytes[7]);
  if (!(major >= 1 && major <= 3 && minor == 0))
    return error("unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                 " (kiln reads versions 1.0, 2.0 and 3.0)");
  size_t lengthWidth = major == 1 ? 2 : 4;
  size_t headerStart = kMagic.size() + 2 + lengthWidth;
  if (bytes.size() < headerStart)
    return error("truncated .npy header: the file ends inside the header length");
  size_t headerLength = readLittleEndian(bytes, kMagic.size() + 2, lengthWidth);
  if (bytes.size() - headerStart < headerLength)
    return error("truncated .npy header: it should be " + std::to_string(headerLength) + " bytes but the file has " +
                 std::to_string(bytes.size() - headerStart) + " after the header length");
  std::string_view headerText = bytes.substr(headerStart, headerLength);

  PyParse dict = parsePyLiteral(headerText);
  if (!dict.value) return error("malformed .npy header: " + dict.error + ": " + excerpt(headerText, dict.errorPos));
  Header header;
  if (std::optional<std::string> bad = validateHeader(*dict.value, header)) return error(*bad);

  // Sizes are checked before anything is allocated: a header may claim any shape.
  std::string_view data = bytes.substr(headerStart + headerLength);
  size_t needed = static_cast<size_t>(header.dataBytes);
  std::string what = "shape " + shapeRepr(header.shape) + " of " + pyQuote(header.descr) + " needs " +
                     std::to_string(needed) + " bytes of data";
  if (data.size() < needed)
    return error("truncated .npy data: " + what + " but the file has " + std::to_string(data.size()));
  if (data.size() > needed)
    return error(std::to_string(data.size() - needed) + " unexpected bytes after the .npy data (" + what + ")");
  return NpyLayout{TensorType{header.dtype, header.shape}, headerStart + headerLength};
}

void normalizeBools(void* data, size_t bytes) {
  auto* p = static_cast<uint8_t*>(data);
  for (size_t k = 0; k < bytes; ++k) p[k] = p[k] != 0;
}

Expected<Tensor> decodeNpy(std::string_view bytes, const std::string& source) {
  auto layout = parseNpy(bytes, source);
  if (!layout) return layout.error();
  Tensor tensor(layout->type);
  if (tensor.byteSize()) std::memcpy(tensor.data(), bytes.data() + layout->dataOffset, tensor.byteSize());
  if (tensor.dtype() == DType::Bool) normalizeBools(tensor.data(), tensor.byteSize());
  return tensor;
}

std::string encodeNpy(const Tensor& tensor) {
  // As numpy.lib.format._write_array_header: sorted keys, spare room to grow axis 0, then padding.
  std::string dict = "{'descr': '" + std::string(npyDescr(tensor.dtype())) +
                     "', 'fortran_order': False, 'shape': " + shapeRepr(tensor.shape()) + ", }";
  if (tensor.rank() > 0) dict.append(kGrowthAxisMaxDigits - std::to_string(tensor.shape()[0]).size(), ' ');

  auto paddedLength = [&](size_t lengthWidth) {
    size_t hlen = dict.size() + 1;  // with the final '\n'
    return hlen + kArrayAlign - (kMagic.size() + 2 + lengthWidth + hlen) % kArrayAlign;
  };
  int major = paddedLength(2) <= 0xffff ? 1 : 2;
  size_t lengthWidth = major == 1 ? 2 : 4;
  size_t headerLength = paddedLength(lengthWidth);

  std::string out;
  out.reserve(kMagic.size() + 2 + lengthWidth + headerLength + tensor.byteSize());
  out += kMagic;
  out += static_cast<char>(major);
  out += '\0';
  for (size_t k = 0; k < lengthWidth; ++k) out += static_cast<char>((headerLength >> (8 * k)) & 0xff);
  out += dict;
  out.append(headerLength - dict.size() - 1, ' ');
  out += '\n';
  size_t dataStart = out.size();
  if (tensor.byteSize()) out.append(static_cast<const char*>(tensor.data()), tensor.byteSize());
  if (tensor.dtype() == DType::Bool)
    for (size_t k = dataStart; k < out.size(); ++k) out[k] = out[k] != 0;
  return out;
}

Expected<Tensor> readNpy(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error("cannot read '" + path + "': " + errnoText(errno));
  std::string bytes;
  struct stat st;
  if (::fstat(fd, &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      ::close(fd);
      return Error("cannot read '" + path + "': " + errnoText(EISDIR));
    }
    if (st.st_size > 0) bytes.reserve(static_cast<size_t>(st.st_size));
  }
  char buffer[1 << 16];
  while (true) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return Error("cannot read '" + path + "': " + errnoText(err));
    }
    bytes.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return decodeNpy(bytes, path);
}

Status writeNpy(const std::string& path, const Tensor& tensor) {
  const std::string bytes = encodeNpy(tensor);
  auto failure = [&](int err) { return Error("cannot write '" + path + "': " + errnoText(err)); };

  // A fresh name beside the target (rename is atomic only within one file system). O_EXCL never clobbers
  // another writer's temporary; mode 0666 lets the umask decide, as for any new file.
  static std::atomic<unsigned> counter{0};
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; fd < 0 && attempt < 100; ++attempt) {
    tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) return failure(errno);
  }
  if (fd < 0) return failure(EEXIST);

  size_t written = 0;
  while (written < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = n < 0 ? errno : EIO;
      ::close(fd);
      ::unlink(tmp.c_str());
      return failure(err);
    }
    written += static_cast<size_t>(n);
  }
  // No fsync: the rename already keeps readers from seeing half a file, which is the promise made here.
  if (::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return failure(err);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return failure(err);
  }
  return Status();
}

}  // namespace kiln
