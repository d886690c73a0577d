// Graph: the public face of a parsed, imported or built Module.
#include "kiln/graph.h"

#include <string_view>

#include "api/function_lookup.h"
#include "frontend/onnx/onnx_import.h"
#include "frontend/parser.h"
#include "ir/interp/interpreter.h"
#include "ir/printer.h"
#include "runtime/random_inputs.h"

namespace kiln {

namespace api {

Expected<Function*> findFunction(const Module& module, const std::string& name) { return module.find(name, "the graph"); }

Signature signatureOf(const Function& function) {
  Signature s{function.name(), {}, {}};
  for (const Value* p : function.params()) s.params.push_back({p->name(), p->type()});
  for (const TensorType& t : function.resultTypes()) s.results.push_back({"", t});
  return s;
}

}  // namespace api

Graph::Graph(std::shared_ptr<const Module> module) : module_(std::move(module)) {}

Expected<Graph> Graph::parse(std::string_view text, const std::string& filename) {
  auto module = parseModule(text, filename);
  if (!module) return module.error();
  return Graph(std::shared_ptr<const Module>(std::move(*module)));
}

Expected<Graph> Graph::load(const std::string& path) {
  if (path.size() >= 5 && path.compare(path.size() - 5, 5, ".onnx") == 0) {
    auto model = importOnnxFile(path);
    if (!model) return model.error();
    return Graph(std::shared_ptr<const Module>(std::move(model->module)));
  }
  auto module = parseFile(path);
  if (!module) return module.error();
  return Graph(std::shared_ptr<const Module>(std::move(*module)));
}

std::vector<std::string> Graph::functions() const {
  std::vector<std::string> names;
  for (const auto& f : module_->functions()) names.push_back(f->name());
  return names;
}

std::string Graph::entry() const {
  const Function* f = module_->entry();
  return f ? f->name() : std::string();
}

Expected<Signature> Graph::signature(const std::string& function) const {
  auto f = api::findFunction(*module_, function);
  if (!f) return f.error();
  return api::signatureOf(**f);
}

std::string Graph::text() const { return printModule(*module_); }

Expected<std::vector<Tensor>> Graph::interpret(const std::vector<Tensor>& inputs, const std::string& function) const {
  auto f = api::findFunction(*module_, function);
  if (!f) return f.error();
  return kiln::interpret(**f, inputs);
}

Expected<std::vector<Tensor>> Graph::randomInputs(uint64_t seed, const std::string& function) const {
  auto f = api::findFunction(*module_, function);
  if (!f) return f.error();
  return kiln::randomInputs(**f, seed);
}

}  // namespace kiln
