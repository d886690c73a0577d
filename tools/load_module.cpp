// Reading the FILE argument that most subcommands take.
#include <fmt/format.h>

#include <iostream>
#include <iterator>

#include "frontend/onnx/onnx_import.h"
#include "frontend/parser.h"
#include "tools/cli.h"

namespace kiln::cli {

Expected<std::unique_ptr<Module>> loadModule(const std::string& path) {
  // An ONNX model is imported with its defaults: initializers as constants, inputs as parameters.
  if (isOnnxPath(path)) {
    auto model = importOnnxFile(path);
    if (!model) return model.error();
    return std::move(model->module);
  }
  if (path != "-") return parseFile(path);
  std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  return parseModule(text, "<stdin>");
}

Expected<Function*> selectEntry(const Module& module, const Args& args, const std::string& path) {
  return module.find(args.get("--entry").value_or(""), path);
}

Expected<LoadedEntry> loadEntry(const Args& args) {
  const std::string& path = args.positional[0];
  auto module = loadModule(path);
  if (!module) return module.error();
  auto selected = selectEntry(**module, args, path);
  if (!selected) return selected.error();
  return LoadedEntry{std::move(*module), *selected};
}

void reportError(const Error& error) { fmt::print(stderr, "{}\n", error.str()); }

}  // namespace kiln::cli
