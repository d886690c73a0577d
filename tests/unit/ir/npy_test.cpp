// .npy I/O: NumPy's exact bytes for every dtype, round trips, odd-but-valid headers, every error, fuzzed input.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "ir/npy.h"

namespace kiln {
namespace {

// Golden files written by NumPy 2.4.6 (with ml_dtypes 0.6.0 for bfloat16); see the comment above each.
// They are byte literals so that the test does not need Python. NumPy pads each header with spaces (including
// room for axis 0 to grow) and a '\n' to a multiple of 64 bytes.

// np.save(f, np.arange(6, dtype=np.float32).reshape(2, 3) * 0.5 - 1)
constexpr char kF32_2x3[] =
    "\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }         "
    "                                                 "
    "\n"
    "\x00\x00\x80\xbf\x00\x00\x00\xbf\x00\x00\x00\x00\x00\x00\x00?\x00\x00\x80?\x00\x00\xc0?";
// np.save(f, np.float32(1.5))
constexpr char kF32_SCALAR[] =
    "\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (), }             "
    "                                                 "
    "\n"
    "\x00\x00\xc0?";
// np.save(f, np.zeros((0, 3), np.int64))
constexpr char kI64_0x3[] =
    "\x93NUMPY\x01\x00v\x00{'descr': '<i8', 'fortran_order': False, 'shape': (0, 3), }         "
    "                                                 "
    "\n";
// np.save(f, np.array([True, False, True]))
constexpr char kBOOL_3[] =
    "\x93NUMPY\x01\x00v\x00{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }           "
    "                                                 "
    "\n"
    "\x01\x00\x01";
// np.save(f, np.array([-128, -1, 0, 127], np.int8))
constexpr char kI8_4[] =
    "\x93NUMPY\x01\x00v\x00{'descr': '|i1', 'fortran_order': False, 'shape': (4,), }           "
    "                                                 "
    "\n"
    "\x80\xff\x00\x7f";
// np.save(f, np.array([[1, -2], [2147483647, -2147483648]], np.int32))
constexpr char kI32_2x2[] =
    "\x93NUMPY\x01\x00v\x00{'descr': '<i4', 'fortran_order': False, 'shape': (2, 2), }         "
    "                                                 "
    "\n"
    "\x01\x00\x00\x00\xfe\xff\xff\xff\xff\xff\xff\x7f\x00\x00\x00\x80";
// np.save(f, np.array([0, 1, -2, 65504], np.float16))
constexpr char kF16_4[] =
    "\x93NUMPY\x01\x00v\x00{'descr': '<f2', 'fortran_order': False, 'shape': (4,), }           "
    "                                                 "
    "\n"
    "\x00\x00\x00<\x00\xc0\xff{";
// np.save(f, np.array([1.0, -0.5]))
constexpr char kF64_2[] =
    "\x93NUMPY\x01\x00v\x00{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }           "
    "                                                 "
    "\n"
    "\x00\x00\x00\x00\x00\x00\xf0?\x00\x00\x00\x00\x00\x00\xe0\xbf";
// np.save(f, np.int64(-7))
constexpr char kI64_SCALAR[] =
    "\x93NUMPY\x01\x00v\x00{'descr': '<i8', 'fortran_order': False, 'shape': (), }             "
    "                                                 "
    "\n"
    "\xf9\xff\xff\xff\xff\xff\xff\xff";
// np.save(f, np.zeros((12345678901, 0), np.float32))
constexpr char kF32_BIGDIM_0[] =
    "\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (12345678901, 0), "
    "}                                                "
    "\n";
// np.save(f, np.full((1,) * 30, 2.0))
constexpr char kF64_RANK30[] =
    "\x93NUMPY\x01\x00\xb6\x00{'descr': '<f8', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1,"
    " 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1), }            "
    "                          "
    "\n"
    "\x00\x00\x00\x00\x00\x00\x00@";
// numpy.lib.format header for descr 'bfloat16' + ml_dtypes.bfloat16([1, -2.5, 0.1]).tobytes()
constexpr char kBF16_3[] =
    "\x93NUMPY\x01\x00v\x00{'descr': 'bfloat16', 'fortran_order': False, 'shape': (3,), }      "
    "                                                 "
    "\n"
    "\x80? \xc0\xcd=";
// numpy.lib.format.write_array(f, np.array([[1, 2, 3]], np.int32), version=(2, 0))
constexpr char kI32_1x3_V2[] =
    "\x93NUMPY\x02\x00t\x00\x00\x00{'descr': '<i4', 'fortran_order': False, 'shape': (1, 3), } "
    "                                                       "
    "\n"
    "\x01\x00\x00\x00\x02\x00\x00\x00\x03\x00\x00\x00";
// numpy.lib.format.write_array(f, np.array([[1, 2, 3]], np.int32), version=(3, 0))
constexpr char kI32_1x3_V3[] =
    "\x93NUMPY\x03\x00t\x00\x00\x00{'descr': '<i4', 'fortran_order': False, 'shape': (1, 3), } "
    "                                                       "
    "\n"
    "\x01\x00\x00\x00\x02\x00\x00\x00\x03\x00\x00\x00";
// np.save(f, np.asfortranarray(np.arange(4, dtype=np.float32).reshape(2, 2)))
constexpr char kFortran[] =
    "\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }          "
    "                                                 "
    "\n"
    "\x00\x00\x00\x00\x00\x00\x00@\x00\x00\x80?\x00\x00@@";
// np.save(f, np.array([1, 2], '>i4'))
constexpr char kBigEndian[] =
    "\x93NUMPY\x01\x00v\x00{'descr': '>i4', 'fortran_order': False, 'shape': (2,), }           "
    "                                                 "
    "\n"
    "\x00\x00\x00\x01\x00\x00\x00\x02";
// np.save(f, np.array([-32768, -1, 32767], np.int16))
constexpr char kI16_3[] =
    "\x93NUMPY\x01\x00v\x00{'descr': '<i2', 'fortran_order': False, 'shape': (3,), }           "
    "                                                 "
    "\n"
    "\x00\x80\xff\xff\xff\x7f";
// np.save(f, np.array([0, 128, 255], np.uint8))
constexpr char kU8_3[] =
    "\x93NUMPY\x01\x00v\x00{'descr': '|u1', 'fortran_order': False, 'shape': (3,), }           "
    "                                                 "
    "\n"
    "\x00\x80\xff";
// np.save(f, np.array([1, 4294967295], np.uint32))
constexpr char kU32_2[] =
    "\x93NUMPY\x01\x00v\x00{'descr': '<u4', 'fortran_order': False, 'shape': (2,), }           "
    "                                                 "
    "\n"
    "\x01\x00\x00\x00\xff\xff\xff\xff";
// np.save(f, np.array([1, 18446744073709551615], np.uint64))
constexpr char kU64_2[] =
    "\x93NUMPY\x01\x00v\x00{'descr': '<u8', 'fortran_order': False, 'shape': (2,), }           "
    "                                                 "
    "\n"
    "\x01\x00\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff";
// np.save(f, np.array([1, 2], np.uint16))
constexpr char kUint16[] =
    "\x93NUMPY\x01\x00v\x00{'descr': '<u2', 'fortran_order': False, 'shape': (2,), }           "
    "                                                 "
    "\n"
    "\x01\x00\x02\x00";
// np.save(f, np.zeros(2, dtype=[('a', '<f4'), ('b', '<i4')]))
constexpr char kStructured[] =
    "\x93NUMPY\x01\x00v\x00{'descr': [('a', '<f4'), ('b', '<i4')], 'fortran_order': False, 'sha"
    "pe': (2,), }                                     "
    "\n"
    "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00";
// np.save(f, np.array([1, 2], dtype=ml_dtypes.bfloat16)): NumPy writes descr '<V2'
constexpr char kBF16AsVoid[] =
    "\x93NUMPY\x01\x00v\x00{'descr': '<V2', 'fortran_order': False, 'shape': (2,), }           "
    "                                                 "
    "\n"
    "\x80?\x00@";

template <size_t N>
std::string bytesOf(const char (&literal)[N]) {
  return std::string(literal, N - 1);
}

Tensor tensorOf(DType dtype, Shape shape, const std::vector<double>& values) {
  Tensor out(TensorType{dtype, std::move(shape)});
  EXPECT_EQ(static_cast<size_t>(out.numElements()), values.size());
  for (size_t i = 0; i < values.size(); ++i) out.setDouble(static_cast<int64_t>(i), values[i]);
  return out;
}

// A .npy file around a hand-written header (no padding: readers must not insist on it).
std::string npyFile(std::string_view header, std::string_view data, int major = 1) {
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  int width = major == 1 ? 2 : 4;
  for (int k = 0; k < width; ++k) out += static_cast<char>((header.size() >> (8 * k)) & 0xff);
  out += header;
  out += data;
  return out;
}

std::string f32Bytes(std::vector<float> values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
}

// The message decodeNpy gives for `bytes` named "x.npy", or "(decoded)".
std::string errorOf(std::string_view bytes) {
  Expected<Tensor> t = decodeNpy(bytes, "x.npy");
  return t.ok() ? "(decoded)" : t.error().message();
}

struct Golden {
  std::string name;
  std::string bytes;
  Tensor tensor;
};

// Ints exactly, for values a double cannot hold (u64 beyond 2^53 as its bits).
Tensor intTensorOf(DType dtype, Shape shape, const std::vector<int64_t>& values) {
  Tensor out(TensorType{dtype, std::move(shape)});
  for (size_t i = 0; i < values.size(); ++i) out.setInt(static_cast<int64_t>(i), values[i]);
  return out;
}

std::vector<Golden> goldens() {
  return {
      {"f32[2,3]", bytesOf(kF32_2x3), tensorOf(DType::F32, {2, 3}, {-1, -0.5, 0, 0.5, 1, 1.5})},
      {"f32[]", bytesOf(kF32_SCALAR), tensorOf(DType::F32, {}, {1.5})},
      {"i64[0,3]", bytesOf(kI64_0x3), tensorOf(DType::I64, {0, 3}, {})},
      {"bool[3]", bytesOf(kBOOL_3), tensorOf(DType::Bool, {3}, {1, 0, 1})},
      {"i8[4]", bytesOf(kI8_4), tensorOf(DType::I8, {4}, {-128, -1, 0, 127})},
      {"i32[2,2]", bytesOf(kI32_2x2), tensorOf(DType::I32, {2, 2}, {1, -2, 2147483647, -2147483648.0})},
      {"f16[4]", bytesOf(kF16_4), tensorOf(DType::F16, {4}, {0, 1, -2, 65504})},
      {"f64[2]", bytesOf(kF64_2), tensorOf(DType::F64, {2}, {1, -0.5})},
      {"i64[]", bytesOf(kI64_SCALAR), tensorOf(DType::I64, {}, {-7})},
      {"f32[12345678901,0]", bytesOf(kF32_BIGDIM_0), tensorOf(DType::F32, {12345678901, 0}, {})},
      {"f64[1 x 30]", bytesOf(kF64_RANK30), tensorOf(DType::F64, Shape(30, 1), {2})},
      {"bf16[3]", bytesOf(kBF16_3), tensorOf(DType::BF16, {3}, {1, -2.5, 0.1})},
      {"i16[3]", bytesOf(kI16_3), intTensorOf(DType::I16, {3}, {-32768, -1, 32767})},
      {"u8[3]", bytesOf(kU8_3), intTensorOf(DType::U8, {3}, {0, 128, 255})},
      {"u16[2]", bytesOf(kUint16), intTensorOf(DType::U16, {2}, {1, 2})},
      {"u32[2]", bytesOf(kU32_2), intTensorOf(DType::U32, {2}, {1, 4294967295})},
      {"u64[2]", bytesOf(kU64_2), intTensorOf(DType::U64, {2}, {1, -1})},  // -1: the bits of 2^64 - 1
  };
}

TEST(Npy, EncodesExactlyAsNumPy) {
  for (const Golden& g : goldens()) EXPECT_EQ(encodeNpy(g.tensor), g.bytes) << g.name;
}

TEST(Npy, DecodesNumPyFiles) {
  for (const Golden& g : goldens()) {
    Expected<Tensor> t = decodeNpy(g.bytes, g.name);
    ASSERT_TRUE(t.ok()) << t.error().str();
    EXPECT_TRUE(*t == g.tensor) << g.name;
  }
}

TEST(Npy, DecodesVersions2And3) {
  Tensor expected = tensorOf(DType::I32, {1, 3}, {1, 2, 3});
  for (const std::string& bytes : {bytesOf(kI32_1x3_V2), bytesOf(kI32_1x3_V3)}) {
    Expected<Tensor> t = decodeNpy(bytes, "v.npy");
    ASSERT_TRUE(t.ok()) << t.error().str();
    EXPECT_TRUE(*t == expected);
  }
}

TEST(Npy, RoundTripsEveryDTypeAndShape) {
  std::mt19937_64 rng(7);
  const std::vector<Shape> shapes = {{}, {0}, {5}, {2, 0, 4}, {3, 4}, {2, 3, 4}, {1, 1, 1, 7}};
  for (DType dtype : kAllDTypes) {
    for (const Shape& shape : shapes) {
      Tensor x(TensorType{dtype, shape});
      auto* p = static_cast<uint8_t*>(x.data());
      for (size_t k = 0; k < x.byteSize(); ++k) p[k] = static_cast<uint8_t>(dtype == DType::Bool ? rng() & 1 : rng());
      std::string bytes = encodeNpy(x);
      std::string what = x.type().str();
      EXPECT_EQ((bytes.size() - x.byteSize()) % 64, 0u) << what;
      EXPECT_EQ(bytes[bytes.size() - x.byteSize() - 1], '\n') << what;
      Expected<Tensor> y = decodeNpy(bytes, what);
      ASSERT_TRUE(y.ok()) << y.error().str();
      EXPECT_TRUE(*y == x) << what;
    }
  }
}

TEST(Npy, HugeHeaderUsesVersion2) {
  Tensor x(TensorType{DType::I8, Shape(22000, 1)});  // "1, " x 22000 does not fit a 2-byte header length
  x.setInt(0, -5);
  std::string bytes = encodeNpy(x);
  ASSERT_GT(bytes.size(), 12u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x02\x00", 8));
  size_t headerLength = 0;
  for (int k = 0; k < 4; ++k) headerLength |= static_cast<size_t>(static_cast<uint8_t>(bytes[8 + k])) << (8 * k);
  EXPECT_GT(headerLength, 65535u);
  EXPECT_EQ((12 + headerLength) % 64, 0u);
  EXPECT_EQ(bytes.size(), 12 + headerLength + 1);
  EXPECT_EQ(bytes[12 + headerLength - 1], '\n');
  Expected<Tensor> y = decodeNpy(bytes, "big");
  ASSERT_TRUE(y.ok()) << y.error().str();
  EXPECT_TRUE(*y == x);
}

TEST(Npy, BoolBytesAreNormalised) {
  Expected<Tensor> t = decodeNpy(
      npyFile("{'descr': '|b1', 'fortran_order': False, 'shape': (3,)}", std::string("\x02\x00\xff", 3)), "b");
  ASSERT_TRUE(t.ok()) << t.error().str();
  EXPECT_EQ(std::string(static_cast<const char*>(t->data()), 3), std::string("\x01\x00\x01", 3));
}

TEST(Npy, AcceptsOddButValidHeaders) {
  const std::string data = f32Bytes({1.0f, 2.0f});
  const Tensor expected = tensorOf(DType::F32, {2}, {1, 2});
  const char* headers[] = {
      "{'shape': (2,), 'fortran_order': False, 'descr': '<f4'}",         // other key order, no trailing comma
      "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2,)}",  // double quotes
      "{ 'descr' : '<f4' ,\n\t'fortran_order' : False , 'shape' : ( 2 , ) , }\n",
      "{'descr':'<f4','fortran_order':False,'shape':(2,),}",
      "{'descr': 'f4', 'fortran_order': False, 'shape': (2,), }",   // no byte order: native
      "{'descr': '=f4', 'fortran_order': False, 'shape': (2,), }",  // native
      "{'descr': '|f4', 'fortran_order': False, 'shape': (2,), }",  // NumPy accepts '|' for any size
      "{'descr': u'<f4', 'fortran_order': False, 'shape': (2L,), }",  // Python 2 writers
      "{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }",     // 1-D: the same layout
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }  # comment\n   \n",
      "{'descr': '<f4', 'fortran_order': False, 'shape': ((2),), }",  // (2) is just 2
  };
  for (int major = 1; major <= 3; ++major) {
    for (const char* header : headers) {
      Expected<Tensor> t = decodeNpy(npyFile(header, data, major), header);
      ASSERT_TRUE(t.ok()) << t.error().str();
      EXPECT_TRUE(*t == expected) << header;
    }
  }
  // Scalars, shapes where Fortran order changes nothing, byte order on one-byte types, big numbers.
  Expected<Tensor> scalar =
      decodeNpy(npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': ()}", f32Bytes({3})), "s");
  ASSERT_TRUE(scalar.ok()) << scalar.error().str();
  EXPECT_TRUE(*scalar == tensorOf(DType::F32, {}, {3}));
  Expected<Tensor> column =
      decodeNpy(npyFile("{'descr': '<f4', 'fortran_order': True, 'shape': (1, 2, 1)}", data), "c");
  ASSERT_TRUE(column.ok()) << column.error().str();
  EXPECT_TRUE(*column == tensorOf(DType::F32, {1, 2, 1}, {1, 2}));
  Expected<Tensor> i8 = decodeNpy(npyFile("{'descr': '>i1', 'fortran_order': False, 'shape': (1,)}", "\xff"), "i");
  ASSERT_TRUE(i8.ok()) << i8.error().str();
  EXPECT_TRUE(*i8 == tensorOf(DType::I8, {1}, {-1}));
  Expected<Tensor> empty = decodeNpy(
      npyFile("{'descr': '<f8', 'fortran_order': True, 'shape': (9_000_000_000_000_000_000, 0, 3)}", ""), "e");
  ASSERT_TRUE(empty.ok()) << empty.error().str();
  EXPECT_EQ(empty->shape(), (Shape{9'000'000'000'000'000'000, 0, 3}));
}

TEST(Npy, RejectsBadFilesWithClearMessages) {
  const std::string f4 = f32Bytes({1.0f, 2.0f});
  auto withHeader = [&](std::string_view header) { return errorOf(npyFile(header, f4)); };
  const std::string supported =
      "kiln reads bool '|b1', i8 '|i1', i16 '<i2', i32 '<i4', i64 '<i8', u8 '|u1', u16 '<u2', u32 '<u4', u64 '<u8', "
      "f16 '<f2', bf16 'bfloat16', f32 '<f4', f64 '<f8'";

  EXPECT_EQ(errorOf(""), "x.npy: empty file, not a .npy file");
  EXPECT_EQ(errorOf("hello, world"), "x.npy: not a .npy file (it does not start with the magic string \"\\x93NUMPY\")");
  EXPECT_EQ(errorOf(std::string("PK\x03\x04\x14\x00", 6)),
            "x.npy: this is a zip archive (an .npz file?), not a .npy file; save single arrays with np.save");
  EXPECT_EQ(errorOf("\x93NUM"), "x.npy: truncated .npy file: it ends after 4 bytes, before the header");
  EXPECT_EQ(errorOf("\x93NUMPY\x04"), "x.npy: truncated .npy file: it ends after 7 bytes, before the header");
  EXPECT_EQ(errorOf(std::string("\x93NUMPY\x04\x00\x10\x00{}", 12)),
            "x.npy: unsupported .npy format version 4.0 (kiln reads versions 1.0, 2.0 and 3.0)");
  EXPECT_EQ(errorOf(std::string("\x93NUMPY\x01\x01\x10\x00{}", 12)),
            "x.npy: unsupported .npy format version 1.1 (kiln reads versions 1.0, 2.0 and 3.0)");
  EXPECT_EQ(errorOf(std::string("\x93NUMPY\x01\x00\x10", 9)),
            "x.npy: truncated .npy header: the file ends inside the header length");
  EXPECT_EQ(errorOf(std::string("\x93NUMPY\x02\x00\x10\x00\x00", 11)),
            "x.npy: truncated .npy header: the file ends inside the header length");
  EXPECT_EQ(errorOf(bytesOf(kF32_2x3).substr(0, 60)),
            "x.npy: truncated .npy header: it should be 118 bytes but the file has 50 after the header length");

  // Malformed headers say what was expected and where.
  EXPECT_EQ(withHeader("{'descr' '<f4'}"),
            "x.npy: malformed .npy header: expected ':' after a dict key at byte 9 of the header: \"{'descr' '<f4'}\"");
  EXPECT_EQ(withHeader("{'descr': '<f4"),
            "x.npy: malformed .npy header: unterminated string at byte 14 of the header: \"{'descr': '<f4\"");
  EXPECT_EQ(withHeader("{'descr': '<f4', 'shape': (2,)"),
            "x.npy: malformed .npy header: expected '}' before the end of the header at byte 30 of the header: "
            "\"{'descr': '<f4', 'shape': (2,)\"");
  EXPECT_EQ(withHeader("{'descr': '<f4' 'shape': (2,)}"),
            "x.npy: malformed .npy header: expected ',' or '}' at byte 16 of the header: "
            "\"{'descr': '<f4' 'shape': (2,)}\"");
  EXPECT_EQ(withHeader("{'descr': '<f4', 'fortran_order': false, 'shape': (2,)}"),
            "x.npy: malformed .npy header: unexpected name 'false' (expected a string, a number, True, False or a "
            "tuple) at byte 34 of the header: \"{'descr': '<f4', 'fortran_order': false, 'shape': (2,)}\"");
  EXPECT_EQ(withHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (2.0,)}"),
            "x.npy: malformed .npy header: expected an integer at byte 52 of the header: "
            "\"{'descr': '<f4', 'fortran_order': False, 'shape': (2.0,)}\"");
  EXPECT_EQ(withHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} x"),
            "x.npy: malformed .npy header: unexpected text after the dict at byte 56 of the header: "
            "\"{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} x\"");
  EXPECT_EQ(withHeader("\x01"), "x.npy: malformed .npy header: unexpected character '\\x01' at byte 0 of the header: "
                                "'\\x01'");
  EXPECT_EQ(withHeader(std::string(100, '(')),
            "x.npy: malformed .npy header: literal nested too deeply at byte 33 of the header: '" +
                std::string(100, '(') + "'");
  EXPECT_EQ(withHeader(""), "x.npy: malformed .npy header: unexpected end of the header at byte 0 of the header: ''");

  // The dict's keys.
  EXPECT_EQ(withHeader("['descr', '<f4']"), "x.npy: the header is not a dict: ['descr', '<f4']");
  EXPECT_EQ(withHeader("{'fortran_order': False, 'shape': (2,)}"), "x.npy: the header has no 'descr' key");
  EXPECT_EQ(withHeader("{'descr': '<f4', 'shape': (2,)}"), "x.npy: the header has no 'fortran_order' key");
  EXPECT_EQ(withHeader("{'descr': '<f4', 'fortran_order': False}"), "x.npy: the header has no 'shape' key");
  EXPECT_EQ(withHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1}"),
            "x.npy: unexpected key 'extra' in the header (it has exactly 'descr', 'fortran_order' and 'shape')");
  EXPECT_EQ(withHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'shape': (2,)}"),
            "x.npy: duplicate key 'shape' in the header");

  // descr.
  EXPECT_EQ(errorOf(bytesOf(kBigEndian)),
            "x.npy: big-endian data (descr '>i4') is not supported; convert with arr.astype('<i4')");
  EXPECT_EQ(withHeader("{'descr': '>f4', 'fortran_order': False, 'shape': (2,)}"),
            "x.npy: big-endian data (descr '>f4') is not supported; convert with arr.astype('<f4')");
  EXPECT_EQ(withHeader("{'descr': '<c8', 'fortran_order': False, 'shape': (1,)}"),
            "x.npy: unsupported dtype '<c8'; " + supported);
  EXPECT_EQ(withHeader("{'descr': 'float32', 'fortran_order': False, 'shape': (2,)}"),
            "x.npy: unsupported dtype 'float32'; " + supported);
  EXPECT_EQ(errorOf(bytesOf(kStructured)),
            "x.npy: structured dtypes (descr [('a', '<f4'), ('b', '<i4')]) are not supported");
  EXPECT_EQ(errorOf(bytesOf(kBF16AsVoid)),
            "x.npy: descr '<V2' is raw 2-byte data (NumPy saves ml_dtypes.bfloat16 arrays this way) and kiln cannot "
            "tell what it holds; save bfloat16 data with kiln, or as float32 (arr.astype('<f4')) and cast it");
  EXPECT_EQ(withHeader("{'descr': 4, 'fortran_order': False, 'shape': (2,)}"),
            "x.npy: 'descr' must be a string, got 4");

  // fortran_order.
  EXPECT_EQ(errorOf(bytesOf(kFortran)),
            "x.npy: Fortran-order arrays are not supported; save np.ascontiguousarray(arr)");
  EXPECT_EQ(withHeader("{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}"),
            "x.npy: 'fortran_order' must be True or False, got 0");

  // shape.
  EXPECT_EQ(withHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (2)}"),
            "x.npy: 'shape' must be a tuple of ints, got 2 (a 1-D shape is written (2,))");
  EXPECT_EQ(withHeader("{'descr': '<f4', 'fortran_order': False, 'shape': [2]}"),
            "x.npy: 'shape' must be a tuple of ints, got [2]");
  EXPECT_EQ(withHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (2, '3')}"),
            "x.npy: 'shape' must be a tuple of ints, got (2, '3')");
  EXPECT_EQ(withHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}"),
            "x.npy: negative dimension -2 in shape (-2,)");
  EXPECT_EQ(withHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 99999999999999999999)}"),
            "x.npy: dimension 99999999999999999999 in shape (1, 99999999999999999999) is out of range");
  EXPECT_EQ(withHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (-9223372036854775808,)}"),
            "x.npy: negative dimension -9223372036854775808 in shape (-9223372036854775808,)");
  EXPECT_EQ(withHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (-9223372036854775809,)}"),
            "x.npy: dimension -9223372036854775809 in shape (-9223372036854775809,) is out of range");
  EXPECT_EQ(withHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (9223372036854775807,)}"),
            "x.npy: shape (9223372036854775807,) has too many elements");  // elements fit, bytes do not
  EXPECT_EQ(withHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296)}"),
            "x.npy: shape (4294967296, 4294967296) has too many elements");
  EXPECT_EQ(withHeader("{'descr': '<f8', 'fortran_order': False, 'shape': (2305843009213693952,)}"),
            "x.npy: shape (2305843009213693952,) has too many elements");  // fits int64 elements, not bytes

  // Data size.
  EXPECT_EQ(errorOf(bytesOf(kF32_2x3).substr(0, bytesOf(kF32_2x3).size() - 1)),
            "x.npy: truncated .npy data: shape (2, 3) of '<f4' needs 24 bytes of data but the file has 23");
  EXPECT_EQ(errorOf(bytesOf(kF32_2x3) + "xyz"),
            "x.npy: 3 unexpected bytes after the .npy data (shape (2, 3) of '<f4' needs 24 bytes of data)");
  EXPECT_EQ(withHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000000,)}"),
            "x.npy: truncated .npy data: shape (1000000000000,) of '<f4' needs 4000000000000 bytes of data but the "
            "file has 8");

  // Errors print with the "error: " prefix and no location.
  EXPECT_EQ(decodeNpy("", "in.npy").error().str(), "error: in.npy: empty file, not a .npy file");
}

TEST(Npy, LongHeadersAreShortenedInMessages) {
  // The excerpt is a window around the error.
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), " + std::string(300, ' ') + "!}" +
                       std::string(300, ' ') + "x";
  EXPECT_EQ(errorOf(npyFile(header, "")),
            "x.npy: malformed .npy header: unexpected character '!' at byte 356 of the header: ...'" +
                std::string(80, ' ') + "!}" + std::string(38, ' ') + "'...");
}

// Mutated and truncated NumPy files: each must decode or fail with a message naming the source; nothing may crash
// (the suite also runs under ASan and UBSan) or allocate what the header claims before the data is there.
TEST(Npy, FuzzedFilesDecodeOrFailCleanly) {
  std::vector<std::string> seeds;
  for (const Golden& g : goldens()) seeds.push_back(g.bytes);
  for (const std::string& s : {bytesOf(kI32_1x3_V2), bytesOf(kI32_1x3_V3), bytesOf(kFortran), bytesOf(kBigEndian),
                               bytesOf(kStructured), bytesOf(kBF16AsVoid), bytesOf(kUint16)})
    seeds.push_back(s);
  const std::string alphabet = "{}()[],:'\"\\ \n\t#0123456789-+_.eLuTrueFalsNo<>|=bifV";
  std::mt19937 rng(20240611);
  auto below = [&](size_t n) { return n == 0 ? 0 : static_cast<size_t>(rng() % n); };
  int decoded = 0, failed = 0;
  for (int iteration = 0; iteration < 20000; ++iteration) {
    std::string b = seeds[below(seeds.size())];
    for (int m = 1 + static_cast<int>(below(4)); m > 0; --m) {
      size_t headerEnd = std::min<size_t>(b.size(), 200);
      switch (below(8)) {
        case 0: b.resize(below(b.size() + 1)); break;                                    // truncate
        case 1: if (!b.empty()) b[below(b.size())] = static_cast<char>(rng()); break;  // any byte
        case 2: if (headerEnd > 10) b[10 + below(headerEnd - 10)] = alphabet[below(alphabet.size())]; break;
        case 3: b.insert(below(headerEnd + 1), 1, alphabet[below(alphabet.size())]); break;
        case 4: if (!b.empty()) b.erase(below(b.size()), 1 + below(8)); break;
        case 5: if (b.size() > 9) b[8 + below(2)] = static_cast<char>(rng()); break;  // header length
        case 6: b += std::string(below(16), static_cast<char>(rng())); break;         // trailing bytes
        case 7: if (b.size() > 128) b[128 + below(b.size() - 128)] = static_cast<char>(rng()); break;  // data
      }
    }
    Expected<Tensor> t = decodeNpy(b, "fuzz.npy");
    if (!t.ok()) {
      ++failed;
      ASSERT_EQ(t.error().message().rfind("fuzz.npy: ", 0), 0u) << t.error().message();
      continue;
    }
    ++decoded;
    Expected<Tensor> again = decodeNpy(encodeNpy(*t), "again");
    ASSERT_TRUE(again.ok()) << again.error().str();
    ASSERT_TRUE(*again == *t);
  }
  EXPECT_GT(decoded, 500);
  EXPECT_GT(failed, 5000);
  // Random bytes after a valid magic and version.
  for (int iteration = 0; iteration < 5000; ++iteration) {
    std::string b = std::string("\x93NUMPY", 6) + static_cast<char>(1 + below(3)) + '\0';
    for (size_t n = below(300); n > 0; --n) b += static_cast<char>(rng());
    Expected<Tensor> t = decodeNpy(b, "random.npy");
    if (!t.ok()) {
      ASSERT_EQ(t.error().message().rfind("random.npy: ", 0), 0u);
    }
  }
}

// Files: written atomically beside the target, read back, and errors that name the path and the reason.
class NpyFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "kiln_npy_XXXXXX";
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    for (const std::string& name : list()) {
      std::string path = dir_ + "/" + name;
      if (::unlink(path.c_str()) != 0) ::rmdir(path.c_str());
    }
    ::rmdir(dir_.c_str());
  }
  std::vector<std::string> list() const {
    std::vector<std::string> names;
    if (DIR* d = ::opendir(dir_.c_str())) {
      while (dirent* e = ::readdir(d))
        if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") names.push_back(e->d_name);
      ::closedir(d);
    }
    std::sort(names.begin(), names.end());
    return names;
  }
  static void writeFile(const std::string& path, std::string_view text) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0666);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    ::close(fd);
  }
  std::string dir_;
};

TEST_F(NpyFiles, WritesAndReadsBack) {
  Tensor x = tensorOf(DType::F32, {2, 3}, {-1, -0.5, 0, 0.5, 1, 1.5});
  std::string path = dir_ + "/x.npy";
  ASSERT_TRUE(writeNpy(path, x).ok());
  Expected<Tensor> y = readNpy(path);
  ASSERT_TRUE(y.ok()) << y.error().str();
  EXPECT_TRUE(*y == x);
  EXPECT_EQ(list(), std::vector<std::string>{"x.npy"});  // no temporary left behind

  Tensor z = tensorOf(DType::I64, {}, {42});  // overwriting replaces the file
  ASSERT_TRUE(writeNpy(path, z).ok());
  Expected<Tensor> w = readNpy(path);
  ASSERT_TRUE(w.ok()) << w.error().str();
  EXPECT_TRUE(*w == z);
  EXPECT_EQ(list(), std::vector<std::string>{"x.npy"});
}

TEST_F(NpyFiles, NewFilesGetTheUsualPermissions) {
  std::string reference = dir_ + "/reference";
  int fd = ::open(reference.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0666);
  ASSERT_GE(fd, 0);
  ::close(fd);
  ASSERT_TRUE(writeNpy(dir_ + "/x.npy", tensorOf(DType::I8, {1}, {1})).ok());
  struct stat a, b;
  ASSERT_EQ(::stat(reference.c_str(), &a), 0);
  ASSERT_EQ(::stat((dir_ + "/x.npy").c_str(), &b), 0);
  EXPECT_EQ(a.st_mode & 0777, b.st_mode & 0777);
}

TEST_F(NpyFiles, ErrorsNameThePathAndTheReason) {
  Tensor x = tensorOf(DType::F32, {1}, {1});
  EXPECT_EQ(readNpy(dir_ + "/missing.npy").error().message(),
            "cannot read '" + dir_ + "/missing.npy': No such file or directory");
  EXPECT_EQ(readNpy(dir_).error().message(), "cannot read '" + dir_ + "': Is a directory");
  Status s = writeNpy(dir_ + "/no/such/x.npy", x);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message(), "cannot write '" + dir_ + "/no/such/x.npy': No such file or directory");

  ASSERT_EQ(::mkdir((dir_ + "/sub").c_str(), 0777), 0);
  Status over = writeNpy(dir_ + "/sub", x);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().message(), "cannot write '" + dir_ + "/sub': Is a directory");
  EXPECT_EQ(list(), std::vector<std::string>{"sub"});  // the temporary was removed

  std::string bad = dir_ + "/bad.npy";
  writeFile(bad, "not numpy");
  EXPECT_EQ(readNpy(bad).error().message(),
            bad + ": not a .npy file (it does not start with the magic string \"\\x93NUMPY\")");
}

}  // namespace
}  // namespace kiln
