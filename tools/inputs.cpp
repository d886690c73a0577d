// Reading --input files and making random inputs (inputs.h).
#include "tools/inputs.h"

#include <fmt/format.h>

#include <algorithm>

#include "frontend/onnx/onnx_import.h"
#include "ir/npy.h"
#include "runtime/random_inputs.h"

namespace kiln::cli {

Expected<Tensor> readTensorFile(const std::string& path) {
  auto endsWith = [&](const std::string& ext) { return path.size() >= ext.size() && path.compare(path.size() - ext.size(), ext.size(), ext) == 0; };
  if (endsWith(".npy")) return readNpy(path);
  if (!endsWith(".pb")) return Error(path + ": expected a NumPy .npy or an ONNX TensorProto .pb file");
  auto t = readOnnxTensorFile(path);
  if (!t) return t.error();
  return std::move(t->value);
}

namespace {

std::string paramList(const Function& f) {
  std::string s;
  for (Value* p : f.params()) s += (s.empty() ? "%" : ", %") + p->name();
  return s.empty() ? "none" : s;
}

// Reads each --input NAME=PATH (.npy or .pb) into its parameter's slot; reports the first problem.
bool loadInputs(const Command& c, const Args& args, const Function& f, std::vector<std::optional<Tensor>>& inputs,
                std::vector<std::string>& sources) {
  std::vector<Value*> params = f.params();
  for (const std::string& spec : args.all("--input")) {
    auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
      usageError(c, "--input takes NAME=PATH (a .npy or an ONNX .pb file), got '" + spec + "'");
      return false;
    }
    std::string name = spec.substr(0, eq), path = spec.substr(eq + 1);
    if (name[0] == '%') name.erase(0, 1);
    auto it = std::find_if(params.begin(), params.end(), [&](Value* p) { return p->name() == name; });
    if (it == params.end()) {
      usageError(c, "--input " + spec + ": @" + f.name() + " has no parameter %" + name + " (parameters: " +
                        paramList(f) + ")");
      return false;
    }
    size_t index = static_cast<size_t>(it - params.begin());
    if (inputs[index]) {
      usageError(c, "--input: parameter %" + name + " is given twice");
      return false;
    }
    auto tensor = readTensorFile(path);
    if (!tensor) {
      reportError(tensor.error());
      return false;
    }
    const TensorType& want = params[index]->type();
    if (tensor->type() != want) {
      bool npy = path.size() >= 4 && path.compare(path.size() - 4, 4, ".npy") == 0;
      std::string hint = !npy ? "" : tensor->dtype() != want.dtype ? " (convert with arr.astype(...) in NumPy)" : " (reshape it in NumPy)";
      reportError(Error(path + ": parameter %" + name + " of @" + f.name() + " is " + want.str() + ", the file holds " +
                        tensor->type().str() + hint));
      return false;
    }
    inputs[index] = std::move(*tensor);
    sources[index] = "from " + path;
  }
  return true;
}

}  // namespace

std::optional<std::vector<Tensor>> programInputs(const Command& c, const Args& args, const Function& f, uint64_t seed,
                                                 std::vector<std::string>& sources) {
  std::vector<Value*> params = f.params();
  std::vector<std::optional<Tensor>> given(params.size());
  sources.assign(params.size(), "");
  if (!loadInputs(c, args, f, given, sources)) return std::nullopt;
  std::vector<Tensor> random = randomInputs(f, seed);
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < params.size(); ++i) {
    if (!given[i]) sources[i] = fmt::format("random (seed {})", seed);
    inputs.push_back(given[i] ? std::move(*given[i]) : std::move(random[i]));
  }
  return inputs;
}

}  // namespace kiln::cli
