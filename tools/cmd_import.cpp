// `kiln import`: an ONNX model as kiln text.
#include <fmt/format.h>

#include "frontend/onnx/onnx_import.h"
#include "ir/printer.h"
#include "tools/cli.h"
#include "tools/inputs.h"

namespace kiln::cli {

namespace {

// --value NAME=FILE: a graph input's value known at compile time, from an ONNX .pb or a NumPy .npy.
bool readKnownValues(const Command& c, const Args& args, OnnxImportOptions& options) {
  for (const std::string& spec : args.all("--value")) {
    auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
      usageError(c, "--value takes NAME=PATH (.pb or .npy), got '" + spec + "'");
      return false;
    }
    std::string name = spec.substr(0, eq), path = spec.substr(eq + 1);
    Expected<Tensor> value = readTensorFile(path);
    if (!value) {
      reportError(value.error());
      return false;
    }
    options.knownInputs[name] = std::move(*value);
  }
  return true;
}

int run(const Command& c, const Args& args) {
  if (args.positional.size() != 1)
    return usageError(c, args.positional.empty() ? "missing MODEL.onnx" : "expected one MODEL.onnx, got " + std::to_string(args.positional.size()));
  OnnxImportOptions options;
  options.initializersAsParameters = args.has("--initializers-as-parameters");
  if (!readKnownValues(c, args, options)) return kExitError;
  auto model = importOnnxFile(args.positional[0], options);
  if (!model) {
    reportError(model.error());
    return kExitError;
  }
  return writeOutput(args, printModule(*model->module));
}

}  // namespace

Command importCommand() {
  Command c{"import", "import an ONNX model as kiln text", "kiln import MODEL.onnx [-o OUT.kiln] [--value NAME=PATH]... [--initializers-as-parameters]",
            "Converts an ONNX model (opsets 6 to 17) into a kiln module and prints it (or writes it to -o).\n"
            "Graph inputs become parameters of @main, initializers constants (or trailing parameters with\n"
            "--initializers-as-parameters), graph outputs its results. Inputs that carry shapes or axes\n"
            "(Reshape's shape, Slice's starts, ...) must be known at compile time: an initializer, a Constant,\n"
            "or a value given with --value. A model using ops or dtypes kiln lacks fails with one message\n"
            "listing all of them and the nodes that use them. `kiln run`, `check` and `compile` also take\n"
            "a .onnx file directly.",
            {{"-o", "FILE", "write the kiln text to FILE instead of standard output"},
             {"--value", "NAME=PATH", "graph input NAME is known at compile time: its value from an ONNX .pb or a .npy file", true},
             {"--initializers-as-parameters", "", "make initializers parameters of @main instead of constants"}},
            nullptr};
  c.run = [c](const Args& args) { return run(c, args); };
  return c;
}

}  // namespace kiln::cli
