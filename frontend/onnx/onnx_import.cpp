// The importer's driver: parse the ModelProto, list everything kiln cannot import (all at once),
// then build @main from the graph: inputs become parameters, initializers constants (or
// parameters), each node goes through its converter, graph outputs become the results.
//
// Inputs that carry shapes or axes must be known at compile time. The first build records which
// parameters with a known value (given inputs, initializers as parameters) some op needed so; a
// second build then makes exactly those constants, so the others stay parameters.
#include "frontend/onnx/onnx_import.h"

#include <algorithm>
#include <deque>
#include <fstream>
#include <limits>
#include <sstream>

#include "frontend/onnx/onnx_converters.h"
#include "frontend/onnx/onnx_tensor.h"

namespace kiln {

using namespace onnx_import;

namespace {

bool isDefaultDomain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

std::string nodeWhere(const onnx::NodeProto& node, int index) {
  std::string s = "node " + std::to_string(index);
  if (!node.name().empty()) s += " '" + node.name() + "'";
  return s;
}

// Every op type and dtype of the model that kiln lacks, each with where it is used.
std::vector<OnnxUnsupported> findUnsupported(const onnx::GraphProto& graph) {
  std::vector<OnnxUnsupported> out;
  auto note = [&](const std::string& what, const std::string& where) {
    for (auto& u : out)
      if (u.what == what) return u.nodes.push_back(where);
    out.push_back({what, {where}});
  };
  auto noteType = [&](const onnx::ValueInfoProto& v, const std::string& kind) {
    if (!v.type().has_tensor_type()) return note("non-tensor " + kind + "s", kind + " '" + v.name() + "'");
    int32_t t = v.type().tensor_type().elem_type();
    if (!dtypeFromOnnx(t)) note("dtype " + onnxDTypeName(t), kind + " '" + v.name() + "'");
  };
  for (const auto& v : graph.input()) noteType(v, "input");
  for (const auto& v : graph.output()) noteType(v, "output");
  for (const auto& init : graph.initializer())
    if (!dtypeFromOnnx(init.data_type())) note("dtype " + onnxDTypeName(init.data_type()), "initializer '" + init.name() + "'");
  const ConverterTable& table = converters();
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto& node = graph.node(i);
    if (!isDefaultDomain(node.domain())) note("op " + node.domain() + "::" + node.op_type(), nodeWhere(node, i));
    else if (!table.count(node.op_type())) note("op " + node.op_type(), nodeWhere(node, i));
  }
  return out;
}

std::string unsupportedMessage(const std::string& source, const std::vector<OnnxUnsupported>& list) {
  std::string msg = source + " uses what kiln cannot import yet:";
  for (const auto& u : list) {
    msg += "\n  " + u.what + ": ";
    for (size_t i = 0; i < u.nodes.size(); ++i) msg += (i ? ", " : "") + u.nodes[i];
  }
  return msg;
}

Expected<int64_t> defaultOpset(const onnx::ModelProto& model, const std::string& source) {
  for (const auto& o : model.opset_import())
    if (isDefaultDomain(o.domain())) return o.version();
  if (model.opset_import_size() == 0) return int64_t{1};  // IR version 1 models carry none
  return Error(source + ": the model imports no default-domain (ai.onnx) opset");
}

Expected<TensorType> declaredType(const onnx::ValueInfoProto& v, const std::string& what) {
  if (!v.type().has_tensor_type()) return Error(what + " '" + v.name() + "' is not a tensor");
  const auto& tt = v.type().tensor_type();
  auto dtype = dtypeFromOnnx(tt.elem_type());
  if (!dtype) return Error(what + " '" + v.name() + "' has dtype " + onnxDTypeName(tt.elem_type()) + ", which kiln lacks");
  if (!tt.has_shape()) return Error(what + " '" + v.name() + "' has no shape; kiln needs static shapes");
  TensorType t{*dtype, {}};
  for (const auto& d : tt.shape().dim()) {
    if (!d.has_dim_value() || d.dim_value() < 0)
      return Error(what + " '" + v.name() + "' has a symbolic dimension" + (d.has_dim_param() ? " '" + d.dim_param() + "'" : "") +
                   "; kiln needs static shapes (give the input's value when importing)");
    t.shape.push_back(d.dim_value());
  }
  return t;
}

// One build of the graph; `asConstants` names the inputs and initializers to make constants.
Expected<OnnxModel> buildGraph(const onnx::ModelProto& model, const std::string& source, const OnnxImportOptions& options,
                               const std::set<std::string>& asConstants, std::set<std::string>& needed,
                               std::vector<OnnxUnsupported>* unsupported) {
  const onnx::GraphProto& graph = model.graph();
  auto opset = defaultOpset(model, source);
  if (!opset) return opset.error();
  auto prefixed = [&](const Error& e) { return Error(source + ": " + e.message()); };

  std::map<std::string, const onnx::TensorProto*> initializers;
  for (const auto& init : graph.initializer()) initializers[init.name()] = &init;
  std::deque<Tensor> initValues;  // initializers made parameters, kept alive for folding
  auto initializerValue = [&](const onnx::TensorProto& p) { return tensorFromProto(p, "initializer '" + p.name() + "'", unsupported); };

  OnnxModel out;
  out.module = std::make_unique<Module>();
  GraphBuilder b(*out.module, options.functionName);
  GraphState g;
  g.builder = &b;
  g.opset = *opset;
  g.unsupported = unsupported;

  // Parameters first (the builder wants them before any op): graph inputs, then initializers.
  for (const auto& in : graph.input()) {
    if (initializers.count(in.name()) || asConstants.count(in.name())) continue;  // IR < 4 lists initializers as inputs too
    auto known = options.knownInputs.find(in.name());
    TensorType type;
    if (known != options.knownInputs.end()) {
      type = known->second.type();
    } else {
      auto t = declaredType(in, "input");
      if (!t) return prefixed(t.error());
      type = *t;
    }
    Value* p = b.param(type, kilnValueName(in.name()));
    g.values[in.name()] = p;
    out.parameterNames.push_back(in.name());
    if (known != options.knownInputs.end()) g.boundParameters[p] = {in.name(), &known->second};
  }
  if (options.initializersAsParameters) {
    for (const auto& init : graph.initializer()) {
      if (asConstants.count(init.name())) continue;
      auto t = initializerValue(init);
      if (!t) return prefixed(t.error());
      initValues.push_back(std::move(*t));
      Value* p = b.param(initValues.back().type(), kilnValueName(init.name()));
      g.values[init.name()] = p;
      out.parameterNames.push_back(init.name());
      g.boundParameters[p] = {init.name(), &initValues.back()};
    }
  }
  for (const auto& in : graph.input()) {
    if (!asConstants.count(in.name()) || initializers.count(in.name())) continue;
    b.setLoc(SourceLoc{source, 0, 0, "input '" + in.name() + "'"});
    Value* c = b.constant(options.knownInputs.at(in.name()));
    if (c) c->setName(kilnValueName(in.name()));
    g.values[in.name()] = c;
  }
  for (const auto& init : graph.initializer()) {
    if (options.initializersAsParameters && !asConstants.count(init.name())) continue;
    auto t = initializerValue(init);
    if (!t) return prefixed(t.error());
    b.setLoc(SourceLoc{source, 0, 0, "initializer '" + init.name() + "'"});
    Value* c = b.constant(std::move(*t));
    if (c) c->setName(kilnValueName(init.name()));
    g.values[init.name()] = c;
  }
  if (Status s = b.status(); !s) return prefixed(s.error());

  const ConverterTable& table = converters();
  // What converters find they cannot do (an attribute value, a mode) is collected over the whole
  // graph, so the user hears of all of it at once: a node that cannot be imported poisons its
  // outputs, and the nodes reading them are skipped (their failure would only be a consequence).
  std::vector<OnnxUnsupported> found;
  g.unsupported = &found;
  std::set<std::string> poisoned;
  auto poison = [&](const onnx::NodeProto& node) {
    for (const std::string& out : node.output()) poisoned.insert(out);
  };
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto& node = graph.node(i);
    NodeContext ctx(g, node, i);
    if (std::any_of(node.input().begin(), node.input().end(), [&](const std::string& in) { return poisoned.count(in) > 0; })) {
      poison(node);
      continue;
    }
    size_t before = found.size();
    auto it = table.find(node.op_type());
    Status s = !isDefaultDomain(node.domain()) || it == table.end() ? Status(ctx.unsupported("this op")) : Status();
    if (s) {
      // Every kiln op of the node points back at it: run-time errors and `kiln explain` name it.
      b.setLoc(SourceLoc{source, 0, 0, ctx.where()});
      s = it->second(ctx);
      if (s && !b.status()) s = b.status();
    }
    if (!s && found.size() > before) {
      poison(node);
      continue;
    }
    // Builder errors name the kiln op ("reshape: ..."); prefix the node they came from.
    if (!s) {
      const std::string& m = s.error().message();
      return prefixed(m.rfind("node ", 0) == 0 ? s.error() : ctx.error(m));
    }
  }
  if (!found.empty()) {
    // One line per thing kiln lacks, with every node that needs it.
    std::vector<OnnxUnsupported> merged;
    for (OnnxUnsupported& u : found) {
      auto same = std::find_if(merged.begin(), merged.end(), [&](const OnnxUnsupported& m) { return m.what == u.what; });
      if (same == merged.end()) merged.push_back(std::move(u));
      else same->nodes.insert(same->nodes.end(), u.nodes.begin(), u.nodes.end());
    }
    if (unsupported) *unsupported = merged;
    return Error(unsupportedMessage(source, merged));
  }

  std::vector<Value*> results;
  for (const auto& o : graph.output()) {
    auto it = g.values.find(o.name());
    if (it == g.values.end() || !it->second) return prefixed(Error("graph output '" + o.name() + "' is not computed by any node"));
    // The declared type, when fully given, must be what the conversion computed.
    if (auto declared = declaredType(o, "output"); declared && *declared != it->second->type())
      return prefixed(Error("graph output '" + o.name() + "' is declared " + declared->str() + " but computes " +
                            it->second->type().str()));
    results.push_back(it->second);
    out.resultNames.push_back(o.name());
  }
  b.setLoc(SourceLoc{source, 0, 0, "graph '" + graph.name() + "'"});
  auto f = b.finish(results);
  if (!f) return prefixed(f.error());
  out.entry = *f;
  out.entry->setLoc(SourceLoc{source, 0, 0, "graph '" + graph.name() + "'"});
  needed = g.neededAtCompileTime;
  return out;
}

Expected<OnnxModel> importParsed(const onnx::ModelProto& model, const std::string& source,
                                 const OnnxImportOptions& options, std::vector<OnnxUnsupported>* unsupported) {
  if (!model.has_graph()) return Error(source + ": the ONNX model has no graph");
  auto missing = findUnsupported(model.graph());
  if (!missing.empty()) {
    if (unsupported) *unsupported = missing;
    return Error(unsupportedMessage(source, missing));
  }
  std::vector<OnnxUnsupported> late;  // what a converter found it cannot do
  std::set<std::string> asConstants, needed;
  for (int attempt = 0; attempt < 2; ++attempt) {
    late.clear();
    auto result = buildGraph(model, source, options, asConstants, needed, &late);
    if (!result) {
      if (unsupported) *unsupported = late;
      return result.error();
    }
    bool settled = std::includes(asConstants.begin(), asConstants.end(), needed.begin(), needed.end());
    if (settled) return result;
    asConstants.insert(needed.begin(), needed.end());
  }
  return Error(source + ": internal: compile-time inputs did not settle");  // a second build needs nothing new
}

}  // namespace

bool onnxImportAvailable() { return true; }

bool isOnnxPath(std::string_view path) { return path.size() >= 5 && path.substr(path.size() - 5) == ".onnx"; }

Expected<OnnxModel> importOnnxModel(std::string_view bytes, const std::string& source, const OnnxImportOptions& options,
                                    std::vector<OnnxUnsupported>* unsupported) {
  onnx::ModelProto model;
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()))
    return Error(source + ": models over 2 GiB (protobuf's limit) are not supported");
  if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return Error(source + ": not a valid ONNX model (the protobuf data is malformed or truncated)");
  return importParsed(model, source, options, unsupported);
}

Expected<OnnxModel> importOnnxFile(const std::string& path, const OnnxImportOptions& options,
                                   std::vector<OnnxUnsupported>* unsupported) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error("cannot open '" + path + "'");
  // Parsed from the stream, so the file's bytes are never held whole next to the parsed model
  // (a model's weights would otherwise be in memory twice more during import).
  onnx::ModelProto model;
  if (!model.ParseFromIstream(&in))
    return Error(path + ": not a valid ONNX model (the protobuf data is malformed or truncated)");
  return importParsed(model, path, options, unsupported);
}

Expected<std::vector<std::string>> onnxGraphInputNames(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error("cannot open '" + path + "'");
  onnx::ModelProto model;
  if (!model.ParseFromIstream(&in)) return Error(path + ": not a valid ONNX model (the protobuf data is malformed or truncated)");
  std::set<std::string> initializers;
  for (const auto& init : model.graph().initializer()) initializers.insert(init.name());
  std::vector<std::string> names;
  for (const auto& input : model.graph().input())
    if (!initializers.count(input.name())) names.push_back(input.name());
  return names;
}

Expected<OnnxNamedTensor> readOnnxTensorFile(const std::string& path, std::vector<OnnxUnsupported>* unsupported) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error("cannot open '" + path + "'");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  std::string data = bytes.str();
  onnx::TensorProto proto;
  if (data.size() > static_cast<size_t>(std::numeric_limits<int>::max()) ||
      !proto.ParseFromArray(data.data(), static_cast<int>(data.size())))
    return Error(path + ": not a valid ONNX TensorProto (the protobuf data is malformed or truncated)");
  auto t = tensorFromProto(proto, path, unsupported);
  if (!t) return t.error();
  return OnnxNamedTensor{proto.name(), std::move(*t)};
}

}  // namespace kiln
