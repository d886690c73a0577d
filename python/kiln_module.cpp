// kiln._kiln: the native half of the Python module, over the public C++ API (include/kiln/), with
// nanobind. Arrays cross as DLPack-described buffers: an input is any C-contiguous CPU array (NumPy,
// or PyTorch and JAX through DLPack), which a call reads in place (the CPU backend: no copy);
// results are NumPy arrays over kiln's own tensors, handed over without a copy. NumPy has no bfloat16, so bf16 crosses as f32
// (rounded on the way in, exact on the way out). python/kiln/__init__.py is the Python half.
#include <kiln/kiln.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace nb = nanobind;

namespace {

// kiln's errors, raised in Python as kiln.KilnError with kiln's message.
struct KilnException : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void check(const kiln::Status& s) {
  if (!s.ok()) throw KilnException(s.error().str());
}

template <class T>
T take(kiln::Expected<T> e) {
  if (!e) throw KilnException(e.error().str());
  return std::move(*e);
}

using Array = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;

nb::dlpack::dtype dlpackType(kiln::DType t) {
  using Code = nb::dlpack::dtype_code;
  auto of = [](Code code, size_t bytes) {
    return nb::dlpack::dtype{static_cast<uint8_t>(code), static_cast<uint8_t>(bytes * 8), 1};
  };
  switch (t) {
    case kiln::DType::Bool: return of(Code::Bool, 1);
    case kiln::DType::F16: case kiln::DType::F32: case kiln::DType::F64: return of(Code::Float, kiln::dtypeSize(t));
    case kiln::DType::BF16: return of(Code::Bfloat, 2);
    default: return of(kiln::isUnsigned(t) ? Code::UInt : Code::Int, kiln::dtypeSize(t));
  }
}

// The kiln dtype of an array's elements, or an error naming them.
kiln::DType kilnType(const Array& a, size_t position) {
  for (kiln::DType t : kiln::kAllDTypes)
    if (dlpackType(t) == a.dtype()) return t;
  throw KilnException("input " + std::to_string(position) + ": kiln has no dtype for its elements (DLPack code " +
                      std::to_string(a.dtype().code) + ", " + std::to_string(a.dtype().bits) + " bits)");
}

// The array's kiln type.
kiln::TensorType typeOf(const Array& a, size_t position) {
  kiln::TensorType type{kilnType(a, position), {}};
  for (size_t d = 0; d < a.ndim(); ++d) type.shape.push_back(static_cast<int64_t>(a.shape(d)));
  return type;
}

// `arrays` as kiln sees them, for `params` (their types; empty: as they are): views of the arrays'
// own memory, except where an f32 array stands for a bf16 parameter, which is rounded into a
// tensor of `converted` (so the views must not outlive it).
std::vector<kiln::TensorView> toViews(const std::vector<Array>& arrays, const std::vector<kiln::ValueInfo>& params,
                                      std::vector<kiln::Tensor>& converted) {
  converted.reserve(arrays.size());  // views point into it: no reallocation
  std::vector<kiln::TensorView> views;
  for (size_t i = 0; i < arrays.size(); ++i) {
    kiln::TensorView view(typeOf(arrays[i], i), arrays[i].data());
    if (i < params.size() && params[i].type.dtype == kiln::DType::BF16 && view.type.dtype == kiln::DType::F32) {
      kiln::Tensor rounded({kiln::DType::BF16, view.type.shape});
      const float* from = static_cast<const float*>(view.data);
      for (int64_t k = 0; k < rounded.numElements(); ++k) rounded.setDouble(k, from[k]);
      converted.push_back(std::move(rounded));
      view = converted.back();
    }
    views.push_back(view);
  }
  return views;
}

// Tensors holding copies of `arrays` (for calls that keep their inputs: the interpreter's, a
// training step's), converted for `params` as toViews does.
std::vector<kiln::Tensor> toTensors(const std::vector<Array>& arrays, const std::vector<kiln::ValueInfo>& params = {}) {
  std::vector<kiln::Tensor> converted, tensors;
  for (const kiln::TensorView& v : toViews(arrays, params, converted)) tensors.push_back(kiln::Tensor::copyOf(v));
  return tensors;
}

// A NumPy array that owns `t` (moved to the heap; freed with the array): no copy. bf16 becomes f32.
nb::object toArray(kiln::Tensor&& t) {
  if (t.dtype() == kiln::DType::BF16) {
    kiln::Tensor widened({kiln::DType::F32, t.shape()});
    for (int64_t i = 0; i < t.numElements(); ++i) widened.setDouble(i, t.getDouble(i));
    t = std::move(widened);
  }
  auto* owned = new kiln::Tensor(std::move(t));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<kiln::Tensor*>(p); });
  std::vector<size_t> shape(owned->shape().begin(), owned->shape().end());
  return nb::cast(nb::ndarray<nb::numpy>(owned->data(), shape.size(), shape.data(), owner, nullptr,
                                         dlpackType(owned->dtype())));
}

nb::list toArrays(std::vector<kiln::Tensor>&& tensors) {
  nb::list out;
  for (kiln::Tensor& t : tensors) out.append(toArray(std::move(t)));
  return out;
}

// (name, dtype name, shape) per value: what kiln.Function.params shows.
nb::list describe(const std::vector<kiln::ValueInfo>& values) {
  nb::list out;
  for (const kiln::ValueInfo& v : values) {
    nb::list shape;
    for (int64_t d : v.type.shape) shape.append(d);
    out.append(nb::make_tuple(v.name, std::string(kiln::dtypeName(v.type.dtype)), nb::tuple(shape)));
  }
  return out;
}

kiln::Backend backendOf(const std::string& name) {
  auto b = kiln::parseBackend(name);
  if (!b) throw KilnException("unknown backend '" + name + "' (backends: auto, cpu, cuda, interp)");
  return *b;
}

// A Python value as a kiln attribute: bool, int, float, str, a kiln dtype, or a list or tuple of
// ints (or of numbers: floats).
kiln::Attribute toAttribute(const std::string& name, nb::handle v) {
  if (nb::isinstance<nb::bool_>(v)) return nb::cast<bool>(v);
  if (nb::isinstance<nb::int_>(v)) return nb::cast<int64_t>(v);
  if (nb::isinstance<nb::float_>(v)) return nb::cast<double>(v);
  if (nb::isinstance<nb::str>(v)) return nb::cast<std::string>(v);
  if (nb::isinstance<kiln::DType>(v)) return nb::cast<kiln::DType>(v);
  if (nb::isinstance<nb::list>(v) || nb::isinstance<nb::tuple>(v)) {
    std::vector<int64_t> ints;
    std::vector<double> numbers;
    bool allInts = true;
    for (nb::handle item : v) {
      if (nb::isinstance<nb::int_>(item) && !nb::isinstance<nb::bool_>(item)) {
        ints.push_back(nb::cast<int64_t>(item));
        numbers.push_back(static_cast<double>(ints.back()));
      } else if (nb::isinstance<nb::float_>(item)) {
        allInts = false;
        numbers.push_back(nb::cast<double>(item));
      } else {
        throw KilnException("attribute " + name + ": a list holds ints or floats only");
      }
    }
    if (allInts) return ints;
    return numbers;
  }
  throw KilnException("attribute " + name + ": expected a bool, int, float, str, kiln dtype or list of numbers, got " +
                      nb::cast<std::string>(nb::str(nb::handle(v.type()))));
}

kiln::Attributes toAttributes(const nb::kwargs& kwargs) {
  kiln::Attributes attributes;
  for (auto [key, value] : kwargs) {
    std::string name = nb::cast<std::string>(key);
    attributes[name] = toAttribute(name, value);
  }
  return attributes;
}

// A dtype given as kiln.f32 or as its name, "f32".
kiln::DType dtypeOf(nb::handle v) {
  if (nb::isinstance<kiln::DType>(v)) return nb::cast<kiln::DType>(v);
  if (nb::isinstance<nb::str>(v)) {
    std::string name = nb::cast<std::string>(v);
    if (auto t = kiln::parseDType(name)) return *t;
    throw KilnException("unknown dtype '" + name + "'");
  }
  throw KilnException("expected a dtype (kiln.f32 or \"f32\")");
}

kiln::Stage stageOf(const std::string& name) {
  if (name == "kiln") return kiln::Stage::Kiln;
  if (name == "llvm-unopt") return kiln::Stage::LlvmUnoptimized;
  if (name == "llvm") return kiln::Stage::Llvm;
  if (name == "asm" || name == "ptx" || name == "code") return kiln::Stage::Code;
  throw KilnException("unknown stage '" + name + "' (stages: kiln, llvm-unopt, llvm, asm/ptx)");
}

}  // namespace

NB_MODULE(_kiln, m) {
  m.doc() = "kiln's native module: graphs, compiled functions and training steps (see kiln.compile)";
  nb::exception<KilnException>(m, "KilnError", PyExc_RuntimeError);
  m.def("version", [] { return std::string(kiln::version()); });

  nb::enum_<kiln::DType> dtype(m, "DType", "An element type (kiln.f32, kiln.bf16, kiln.i64, ...).");
  for (kiln::DType t : kiln::kAllDTypes) {
    std::string name(kiln::dtypeName(t));
    dtype.value(name.c_str(), t);
    m.attr(t == kiln::DType::Bool ? "bool_" : name.c_str()) = t;  // kiln.f32, kiln.bool_, as jnp's
  }

  nb::class_<kiln::Graph>(m, "Graph", "A module of kiln functions: parsed, loaded from a file or imported from ONNX.")
      .def_static("parse", [](const std::string& text, const std::string& filename) { return take(kiln::Graph::parse(text, filename)); },
                  nb::arg("text"), nb::arg("filename") = "<text>")
      .def_static("load", [](const std::string& path) { return take(kiln::Graph::load(path)); }, nb::arg("path"))
      .def_prop_ro("functions", &kiln::Graph::functions)
      .def_prop_ro("entry", &kiln::Graph::entry)
      .def("params", [](const kiln::Graph& g, const std::string& f) { return describe(take(g.signature(f)).params); },
           nb::arg("function") = "")
      .def("results", [](const kiln::Graph& g, const std::string& f) { return describe(take(g.signature(f)).results); },
           nb::arg("function") = "")
      .def_prop_ro("text", &kiln::Graph::text)
      .def("interpret", [](const kiln::Graph& g, const std::vector<Array>& inputs, const std::string& f) {
             return toArrays(take(g.interpret(toTensors(inputs, take(g.signature(f)).params), f)));
           }, nb::arg("inputs"), nb::arg("function") = "")
      .def("random_inputs", [](const kiln::Graph& g, uint64_t seed, const std::string& f) {
             return toArrays(take(g.randomInputs(seed, f)));
           }, nb::arg("seed") = 0, nb::arg("function") = "");

  nb::class_<kiln::Node>(m, "Node", "A value of a function being built (kiln.FunctionBuilder).")
      .def_prop_ro("dtype", [](const kiln::Node& n) { return n.type().dtype; })
      .def_prop_ro("shape", [](const kiln::Node& n) {
        nb::list shape;
        for (int64_t d : n.type().shape) shape.append(d);
        return nb::tuple(shape);
      })
      .def("__bool__", [](const kiln::Node& n) { return static_cast<bool>(n); })
      .def("__repr__", [](const kiln::Node& n) { return n ? "<kiln.Node " + n.type().str() + ">" : std::string("<kiln.Node (failed)>"); });

  nb::class_<kiln::FunctionBuilder>(m, "FunctionBuilder",
                                    "Builds a function op by op (ops and attributes named as in the text format); "
                                    "the first error is kept and raised by finish().")
      .def(nb::init<std::string>(), nb::arg("name") = "main")
      .def("param", [](kiln::FunctionBuilder& b, nb::handle dtype, const std::vector<int64_t>& shape, const std::string& name) {
             return b.param({dtypeOf(dtype), shape}, name);
           }, nb::arg("dtype"), nb::arg("shape"), nb::arg("name") = "")
      .def("scalar", [](kiln::FunctionBuilder& b, nb::handle dtype, double value) { return b.scalar(dtypeOf(dtype), value); },
           nb::arg("dtype"), nb::arg("value"))
      .def("constant", [](kiln::FunctionBuilder& b, const Array& value) {
             return b.constant(toTensors({value}).at(0));
           }, nb::arg("value"))
      .def("op", [](kiln::FunctionBuilder& b, const std::string& name, nb::args operands, nb::kwargs attributes) {
             return b.op(name, nb::cast<std::vector<kiln::Node>>(operands), toAttributes(attributes));
           }, nb::arg("name"), nb::arg("operands"), nb::arg("attributes"))
      .def("ops", [](kiln::FunctionBuilder& b, const std::string& name, nb::args operands, nb::kwargs attributes) {
             return b.ops(name, nb::cast<std::vector<kiln::Node>>(operands), toAttributes(attributes));
           }, nb::arg("name"), nb::arg("operands"), nb::arg("attributes"))
      .def("finish", [](kiln::FunctionBuilder& b, nb::args results) {
             return take(b.finish(nb::cast<std::vector<kiln::Node>>(results)));
           }, nb::arg("results"));

  nb::class_<kiln::CompiledFunction>(m, "CompiledFunction")
      .def("run", [](const kiln::CompiledFunction& f, const std::vector<Array>& inputs) {
             std::vector<kiln::Tensor> converted;
             std::vector<kiln::TensorView> views = toViews(inputs, f.signature().params, converted);
             kiln::Expected<std::vector<kiln::Tensor>> results = [&] {
               nb::gil_scoped_release released;  // other Python threads run meanwhile
               return f.run(std::span<const kiln::TensorView>(views));
             }();
             return toArrays(take(std::move(results)));
           }, nb::arg("inputs"))
      .def_prop_ro("name", [](const kiln::CompiledFunction& f) { return f.signature().name; })
      .def_prop_ro("params", [](const kiln::CompiledFunction& f) { return describe(f.signature().params); })
      .def_prop_ro("results", [](const kiln::CompiledFunction& f) { return describe(f.signature().results); })
      .def_prop_ro("backend", [](const kiln::CompiledFunction& f) { return std::string(kiln::backendName(f.backend())); })
      .def_prop_ro("kernels", &kiln::CompiledFunction::kernels)
      .def("dump", [](const kiln::CompiledFunction& f, const std::string& stage) { return take(f.dump(stageOf(stage))); },
           nb::arg("stage"));

  m.def("compile", [](const kiln::Graph& graph, const std::string& backend, const std::string& function,
                      const std::string& gpuArch, bool fastMath, const std::vector<std::string>& disabledPasses,
                      const std::string& dumpDir, int devices, bool split) {
          kiln::CompileOptions o;
          o.devices = devices;
          o.split = split;
          o.backend = backendOf(backend);
          o.function = function;
          o.gpuArch = gpuArch;
          o.fastMath = fastMath;
          o.disabledPasses = disabledPasses;
          o.dumpDir = dumpDir;
          nb::gil_scoped_release released;
          return take(kiln::compile(graph, o));
        },
        nb::arg("graph"), nb::arg("backend") = "auto", nb::arg("function") = "", nb::arg("gpu_arch") = "sm_80",
        nb::arg("fast_math") = false, nb::arg("disabled_passes") = std::vector<std::string>{}, nb::arg("dump_dir") = "",
        nb::arg("devices") = 0, nb::arg("split") = false);

  nb::class_<kiln::Trainer>(m, "Trainer")
      .def_static("create", [](const kiln::Graph& graph, const std::vector<std::string>& params, const std::string& optimizer,
                               int64_t batch, int64_t accumulate, const std::string& backend, const std::string& function,
                               int devices, bool split, bool pipeline, const std::string& schedule) {
                    kiln::TrainerOptions o;
                    o.devices = devices;
                    o.split = split;
                    o.pipeline = pipeline;
                    o.schedule = schedule;
                    o.params = params;
                    o.optimizer = optimizer;
                    o.batch = batch;
                    o.accumulate = accumulate;
                    o.backend = backendOf(backend);
                    o.function = function;
                    nb::gil_scoped_release released;
                    return take(kiln::Trainer::create(graph, o));
                  },
                  nb::arg("graph"), nb::arg("params"), nb::arg("optimizer") = "sgd", nb::arg("batch") = 0,
                  nb::arg("accumulate") = 1, nb::arg("backend") = "cpu", nb::arg("function") = "", nb::arg("devices") = 0,
                  nb::arg("split") = false, nb::arg("pipeline") = false, nb::arg("schedule") = "gpipe")
      .def("step", [](kiln::Trainer& t, const std::vector<Array>& data, float lr) {
             std::vector<kiln::Tensor> tensors = toTensors(data);
             kiln::Expected<kiln::TrainStats> stats = [&] {
               nb::gil_scoped_release released;
               return t.step(tensors, lr);
             }();
             kiln::TrainStats s = take(std::move(stats));
             return std::make_pair(s.loss, s.metrics);
           }, nb::arg("data"), nb::arg("lr"))
      .def_prop_ro("param_names", &kiln::Trainer::paramNames)
      .def_prop_ro("data_names", &kiln::Trainer::dataNames)
      .def_prop_ro("step_count", &kiln::Trainer::stepCount)
      .def("params", [](const kiln::Trainer& t) { return toArrays(take(t.params())); })
      .def("set_params", [](kiln::Trainer& t, const std::vector<Array>& params) { check(t.setParams(toTensors(params))); },
           nb::arg("params"))
      .def("save", [](const kiln::Trainer& t, const std::string& dir) { check(t.save(dir)); }, nb::arg("dir"))
      .def("load", [](kiln::Trainer& t, const std::string& dir) { check(t.load(dir)); }, nb::arg("dir"));
}
