// Runs one ONNX backend test folder. Every test_data_set_* is imported with its own inputs known at
// compile time (an op that needs an input's value, such as Reshape's shape, takes it from there),
// run, and compared output by output as ONNX's runner does (Runner.assert_similar_outputs): the
// dtype and shape exactly, numbers (ints too) with np.testing.assert_allclose's rule in double
// (NaN matches NaN, an infinity only itself), bools exactly.
#include "tools/onnx_test_case.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>

#include "frontend/onnx/onnx_import.h"
#include "tools/flat_json.h"

namespace kiln::cli {

namespace fs = std::filesystem;

namespace {

std::string firstLine(const std::string& s) { return s.substr(0, s.find('\n')); }

std::string joinUnsupported(const std::vector<OnnxUnsupported>& list) {
  std::string s;
  for (const auto& u : list) s += (s.empty() ? "" : ", ") + u.what;
  return s;
}

// input_0.pb, input_1.pb, ... in index order (input_10 after input_9).
std::vector<fs::path> numberedFiles(const fs::path& dir, const std::string& prefix) {
  std::vector<std::pair<long, fs::path>> found;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) != 0 || e.path().extension() != ".pb") continue;
    found.push_back({std::strtol(name.c_str() + prefix.size(), nullptr, 10), e.path()});
  }
  std::sort(found.begin(), found.end());
  std::vector<fs::path> out;
  for (auto& f : found) out.push_back(f.second);
  return out;
}

// Floats in the shortest form that reads back as the same value of their dtype (1.01, not
// 1.0099999904632568 for an f32).
std::string elementStr(const Tensor& t, int64_t i) {
  if (t.dtype() == DType::F64) return fmt::format("{}", t.getDouble(i));
  if (isFloat(t.dtype())) return fmt::format("{}", static_cast<float>(t.getDouble(i)));
  return std::to_string(t.getInt(i));
}

// True if the u16 `bits` are a bf16 NaN (any payload).
bool isBf16NaN(int64_t bits) { return (bits & 0x7F80) == 0x7F80 && (bits & 0x7F) != 0; }

// The first element where `got` and `want` differ beyond the tolerance, as a message; empty if none.
// `bf16Bits`: both hold bf16 bit patterns as u16 (asExpected), where any NaN matches any NaN as it
// does for floats -- the payload is not the op's result (x86 rounding keeps it, 0x7FC0 for a quiet
// f32 NaN; a GPU's cvt.rn.bf16.f32 gives the canonical 0x7FFF).
std::string firstMismatch(const Tensor& got, const Tensor& want, const OnnxTolerance& tol, bool bf16Bits) {
  if (got.type() != want.type()) return fmt::format("got {}, expected {}", got.type().str(), want.type().str());
  for (int64_t i = 0; i < got.numElements(); ++i) {
    bool ok;
    if (want.dtype() == DType::Bool) {
      ok = got.getBool(i) == want.getBool(i);
    } else if (bf16Bits && isBf16NaN(want.getInt(i))) {
      ok = isBf16NaN(got.getInt(i));
    } else {
      double g = got.getDouble(i), w = want.getDouble(i);
      ok = (std::isnan(g) && std::isnan(w)) || g == w || std::abs(g - w) <= tol.atol + tol.rtol * std::abs(w);
    }
    if (!ok) return fmt::format("element {} is {}, expected {}", i, elementStr(got, i), elementStr(want, i));
  }
  return "";
}

// `t`'s bytes as a tensor of `dtype` (of the same size), shape kept.
Tensor reinterpret(const Tensor& t, DType dtype) {
  Tensor out(TensorType{dtype, t.shape()});
  std::memcpy(out.data(), t.data(), t.byteSize());
  return out;
}

// ONNX 1.12's generator had no NumPy bfloat16, so its test data holds bf16 tensors as u16 bit
// patterns (the model still declares bfloat16). A u16 input where the model declares bf16 is read
// as those bits. (Its shape stays the data's: CastLike's tests give `like` a shape of its own.)
Tensor asDeclared(Tensor t, const TensorType* declared) {
  if (!declared || declared->dtype != DType::BF16 || t.dtype() != DType::U16) return t;
  return reinterpret(t, DType::BF16);
}

// A bf16 result checked against such u16 data is compared as ONNX's runner compares it: as the
// u16 numbers, with the usual tolerance. (So one bf16 ulp passes: the data's float->bf16 casts
// truncate, ONNX's later reference, ONNX Runtime and kiln round to nearest even.)
Tensor asExpected(Tensor result, const Tensor& expected) {
  if (result.dtype() != DType::BF16 || expected.dtype() != DType::U16) return result;
  return reinterpret(result, DType::U16);
}

// The declared type of each graph input and output, by name, where the model imports without
// knowing any input (nothing if it needs input values to import).
std::map<std::string, TensorType> declaredTypes(const Expected<OnnxModel>& m) {
  std::map<std::string, TensorType> types;
  if (!m) return types;
  std::vector<TensorType> params = m->entry->paramTypes();
  for (size_t i = 0; i < m->parameterNames.size(); ++i) types[m->parameterNames[i]] = params[i];
  for (size_t i = 0; i < m->resultNames.size(); ++i) types[m->resultNames[i]] = m->entry->resultTypes()[i];
  return types;
}

const TensorType* findType(const std::map<std::string, TensorType>& types, const std::string& name) {
  auto it = types.find(name);
  return it == types.end() ? nullptr : &it->second;
}

OnnxTestOutcome fail(std::string detail) { return {OnnxTestOutcome::Fail, firstLine(detail)}; }
// A run-time error, with the node it points at ("node 2 'g' (Gather): gather: index 7 is out of range ...").
OnnxTestOutcome fail(const Error& e) { return fail(e.loc().node.empty() ? e.message() : e.loc().node + ": " + e.message()); }
OnnxTestOutcome unsupported(const std::vector<OnnxUnsupported>& list) { return {OnnxTestOutcome::Unsupported, joinUnsupported(list)}; }

OnnxTestOutcome runDataSet(const fs::path& model, const fs::path& set, Backend backend, const OnnxTolerance& tol) {
  std::vector<OnnxUnsupported> missing;
  // What the model uses that kiln lacks (sequence or optional inputs among it) is known before
  // the data is read: their .pb files are SequenceProtos or OptionalProtos, not TensorProtos.
  // (This import knows no input values, so converters report an unknown value as an error, never
  // as unsupported.)
  auto declared = importOnnxFile(model.string(), {}, &missing);
  if (!declared && !missing.empty()) return unsupported(missing);
  std::map<std::string, TensorType> types = declaredTypes(declared);
  OnnxImportOptions options;
  std::optional<std::vector<std::string>> graphInputs;  // read only when a tensor has no name
  std::vector<fs::path> inputFiles = numberedFiles(set, "input_");
  for (size_t i = 0; i < inputFiles.size(); ++i) {
    const fs::path& p = inputFiles[i];
    auto t = readOnnxTensorFile(p.string(), &missing);
    if (!t) return missing.empty() ? fail(t.error().message()) : unsupported(missing);
    if (t->name.empty()) {
      // As ONNX's runner does: input_i binds to the model's i-th graph input (initializers aside).
      if (!graphInputs) {
        auto names = onnxGraphInputNames(model.string());
        if (!names) return fail(names.error().message());
        graphInputs = std::move(*names);
      }
      if (i >= graphInputs->size())
        return fail(fmt::format("{} has no name and the model has only {} graph inputs", p.string(), graphInputs->size()));
      t->name = (*graphInputs)[i];
    }
    options.knownInputs[t->name] = asDeclared(std::move(t->value), findType(types, t->name));
  }
  std::vector<Tensor> expected;
  for (const fs::path& p : numberedFiles(set, "output_")) {
    auto t = readOnnxTensorFile(p.string(), &missing);
    if (!t) return missing.empty() ? fail(t.error().message()) : unsupported(missing);
    expected.push_back(std::move(t->value));
  }
  auto imported = importOnnxFile(model.string(), options, &missing);
  if (!imported) return missing.empty() ? fail(imported.error().message()) : unsupported(missing);
  std::vector<Tensor> inputs;
  for (const std::string& name : imported->parameterNames) {
    auto it = options.knownInputs.find(name);
    if (it == options.knownInputs.end()) return fail("no input_*.pb gives graph input '" + name + "'");
    inputs.push_back(it->second);
  }
  RunOptions run;
  run.backend = backend;
  auto results = runFunction(*imported->entry, inputs, run);
  if (!results) return fail(results.error());
  if (results->size() != expected.size())
    return fail(fmt::format("{} results, {} expected outputs", results->size(), expected.size()));
  for (size_t i = 0; i < expected.size(); ++i) {
    bool bf16Bits = (*results)[i].dtype() == DType::BF16 && expected[i].dtype() == DType::U16;
    std::string m = firstMismatch(asExpected((*results)[i], expected[i]), expected[i], tol, bf16Bits);
    if (!m.empty()) return fail(fmt::format("{}: output {} '{}': {}", set.filename().string(), i, imported->resultNames[i], m));
  }
  return {OnnxTestOutcome::Pass, ""};
}

}  // namespace

bool isOnnxTestFolder(const std::string& dir) {
  std::error_code ec;
  return fs::exists(fs::path(dir) / "model.onnx", ec) || fs::exists(fs::path(dir) / "data.json", ec);
}

Expected<OnnxTestFolder> locateOnnxTest(const std::string& dir) {
  OnnxTestFolder folder;
  std::error_code ec;
  fs::path jsonPath = fs::path(dir) / "data.json";
  if (fs::exists(fs::path(dir) / "model.onnx", ec)) {
    folder.modelDir = dir;
    // A data.json beside the model may set its tolerances (the model zoo's generated folders do).
    if (fs::exists(jsonPath, ec)) {
      auto json = readFlatJson(jsonPath.string());
      if (!json) return json.error();
      folder.tolerance.rtol = json->number("rtol").value_or(folder.tolerance.rtol);
      folder.tolerance.atol = json->number("atol").value_or(folder.tolerance.atol);
    }
    return folder;
  }
  auto json = readFlatJson(jsonPath.string());
  if (!json) return json.error();
  auto name = json->string("model_name");
  if (!name || name->empty()) return Error(jsonPath.string() + " names no model_name");
  folder.url = json->string("url").value_or("");
  folder.tolerance.rtol = json->number("rtol").value_or(folder.tolerance.rtol);
  folder.tolerance.atol = json->number("atol").value_or(folder.tolerance.atol);
  fs::path models;
  if (const char* m = std::getenv("ONNX_MODELS"); m && *m) models = m;
  else if (const char* h = std::getenv("ONNX_HOME"); h && *h) models = fs::path(h) / "models";
  else if (const char* home = std::getenv("HOME"); home && *home) models = fs::path(home) / ".onnx" / "models";
  else return Error(dir + ": cannot tell where the downloaded model lies (set ONNX_MODELS or HOME)");
  folder.modelDir = (models / *name).string();
  if (!fs::exists(fs::path(folder.modelDir) / "model.onnx", ec))
    return Error(dir + ": the model '" + *name + "' is not downloaded: unpack " + (folder.url.empty() ? "it" : folder.url) +
                 " into " + models.string() + " (as ONNX's test runner does), or set ONNX_MODELS");
  return folder;
}

OnnxTestOutcome runOnnxTestCase(const std::string& dir, Backend backend) {
  auto folder = locateOnnxTest(dir);
  if (!folder) return fail(folder.error().message());
  fs::path model = fs::path(folder->modelDir) / "model.onnx";
  std::vector<fs::path> sets;
  for (const auto& e : fs::directory_iterator(folder->modelDir))
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0) sets.push_back(e.path());
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) return fail(folder->modelDir + " has no test_data_set_* folder");
  for (const fs::path& set : sets) {
    OnnxTestOutcome o = runDataSet(model, set, backend, folder->tolerance);
    if (o.kind != OnnxTestOutcome::Pass) return o;
  }
  return {OnnxTestOutcome::Pass, ""};
}

}  // namespace kiln::cli
