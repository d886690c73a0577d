// The public API's graphs: parsing, loading (.kiln and ONNX), signatures, building in C++, and the
// errors each gives. Only <kiln/kiln.h>: these tests link libkiln.so as a user's program does.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <filesystem>
#include <string>

namespace {

const char* kScale = R"(func @main(%x: f32[2,3], %s: f32[]) -> f32[2] {
  %y = mul %x, %s
  %r = reduce_sum %y {axes = [1]}
  return %r
}
func @other(%a: i32[4]) -> i32[4] {
  %b = neg %a
  return %b
}
)";

kiln::Tensor filled(const kiln::TensorType& type, double start) {
  kiln::Tensor t(type);
  for (int64_t i = 0; i < t.numElements(); ++i) t.setDouble(i, start + static_cast<double>(i));
  return t;
}

TEST(ApiGraph, ParsesAndDescribesItsFunctions) {
  auto g = kiln::Graph::parse(kScale, "scale.kiln");
  ASSERT_TRUE(g) << g.error().str();
  EXPECT_EQ(g->functions(), (std::vector<std::string>{"main", "other"}));
  EXPECT_EQ(g->entry(), "main");
  auto s = g->signature();
  ASSERT_TRUE(s);
  ASSERT_EQ(s->params.size(), 2u);
  EXPECT_EQ(s->params[0].name, "x");
  EXPECT_EQ(s->params[0].type.str(), "f32[2,3]");
  ASSERT_EQ(s->results.size(), 1u);
  EXPECT_EQ(s->results[0].type.str(), "f32[2]");
  EXPECT_EQ(g->signature("@other")->params[0].type.str(), "i32[4]");
  // The canonical text parses back to itself.
  auto again = kiln::Graph::parse(g->text());
  ASSERT_TRUE(again);
  EXPECT_EQ(again->text(), g->text());
}

TEST(ApiGraph, ErrorsNameTheLocationOrTheChoices) {
  auto bad = kiln::Graph::parse("func @main(%x: f32[2]) -> f32[2] {\n  %y = frobnicate %x\n  return %y\n}\n", "bad.kiln");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().str().find("bad.kiln:2:"), std::string::npos) << bad.error().str();
  auto g = kiln::Graph::parse(kScale);
  ASSERT_TRUE(g);
  auto missing = g->signature("nope");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().str().find("functions: @main, @other"), std::string::npos) << missing.error().str();
  auto file = kiln::Graph::load("/nonexistent/model.kiln");
  ASSERT_FALSE(file);
  EXPECT_NE(file.error().str().find("/nonexistent/model.kiln"), std::string::npos) << file.error().str();
}

TEST(ApiGraph, LoadsKilnFilesAndOnnxModels) {
  auto mlp = kiln::Graph::load(std::string(KILN_SOURCE_DIR) + "/examples/mlp.kiln");
  ASSERT_TRUE(mlp) << mlp.error().str();
  EXPECT_EQ(mlp->signature()->params.size(), 5u);
  const std::string relu = "/usr/share/libonnx-testdata/data/node/test_relu/model.onnx";
  if (!std::filesystem::exists(relu)) GTEST_SKIP() << relu << " is missing (Debian's libonnx-testdata)";
  auto onnx = kiln::Graph::load(relu);
  ASSERT_TRUE(onnx) << onnx.error().str();
  auto s = onnx->signature();
  ASSERT_TRUE(s);
  EXPECT_EQ(s->params.size(), 1u);
  EXPECT_EQ(s->results.size(), 1u);
}

TEST(ApiGraph, InterpretsAndMakesRandomInputs) {
  auto g = kiln::Graph::parse(kScale);
  ASSERT_TRUE(g);
  auto inputs = g->randomInputs(3);
  ASSERT_TRUE(inputs);
  ASSERT_EQ(inputs->size(), 2u);
  EXPECT_EQ((*inputs)[0].type().str(), "f32[2,3]");
  auto same = g->randomInputs(3);
  EXPECT_TRUE((*inputs)[0] == (*same)[0]);
  auto r = g->interpret({filled({kiln::DType::F32, {2, 3}}, 0), kiln::Tensor::scalar(kiln::DType::F32, 2)});
  ASSERT_TRUE(r) << r.error().str();
  EXPECT_EQ((*r)[0].getDouble(0), 2 * (0 + 1 + 2));
  EXPECT_EQ((*r)[0].getDouble(1), 2 * (3 + 4 + 5));
  auto wrong = g->interpret({filled({kiln::DType::F32, {3, 2}}, 0), kiln::Tensor::scalar(kiln::DType::F32, 2)});
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().str().find("f32[2,3]"), std::string::npos) << wrong.error().str();
}

TEST(ApiBuilder, BuildsWhatTheTextFormatWrites) {
  kiln::FunctionBuilder b("main");
  kiln::Node x = b.param({kiln::DType::F32, {2, 3}}, "x");
  kiln::Node s = b.param({kiln::DType::F32, {}}, "s");
  kiln::Node r = b.op("reduce_sum", {b.op("mul", {x, s})}, {{"axes", std::vector<int64_t>{1}}});
  EXPECT_EQ(r.type().str(), "f32[2]");
  auto g = b.finish({r});
  ASSERT_TRUE(g) << g.error().str();
  auto parsed = kiln::Graph::parse(kScale);
  auto inputs = *parsed->randomInputs(1);
  EXPECT_TRUE((*g->interpret(inputs))[0] == (*parsed->interpret(inputs))[0]);
  // Every attribute kind.
  kiln::FunctionBuilder c("attrs");
  kiln::Node a = c.param({kiln::DType::F32, {4, 5}}, "a");
  kiln::Node cast = c.op("cast", {a}, {{"to", kiln::DType::F16}});
  kiln::Node mean = c.op("reduce_mean", {cast}, {{"axes", std::vector<int64_t>{0}}, {"keepdims", true}});
  kiln::Node gelu = c.op("gelu", {a}, {{"approximate", std::string("tanh")}});
  kiln::Node g5 = c.param({kiln::DType::F32, {5}}, "g");  // after ops: refused
  EXPECT_FALSE(g5);
  EXPECT_EQ(mean.type().str(), "f16[1,5]");
  EXPECT_EQ(gelu.type().str(), "f32[4,5]");
  EXPECT_FALSE(c.finish({mean, gelu}));
  kiln::FunctionBuilder d("attrs");
  kiln::Node z = d.param({kiln::DType::F32, {4, 5}}, "z");
  kiln::Node scale = d.param({kiln::DType::F32, {5}}, "scale");
  kiln::Node norm = d.op("layer_norm", {z, scale, scale}, {{"axis", int64_t{1}}, {"epsilon", 1e-3}});
  kiln::Node tanh = d.op("gelu", {norm}, {{"approximate", std::string("tanh")}});
  auto built = d.finish({tanh});
  ASSERT_TRUE(built) << built.error().str();
  EXPECT_NE(built->text().find("epsilon = 0.001"), std::string::npos) << built->text();
  EXPECT_NE(built->text().find("approximate = \"tanh\""), std::string::npos) << built->text();
}

TEST(ApiBuilder, TheFirstErrorIsKeptAndReported) {
  kiln::FunctionBuilder b("main");
  kiln::Node x = b.param({kiln::DType::F32, {2, 3}}, "x");
  kiln::Node y = b.param({kiln::DType::F32, {4}}, "y");
  kiln::Node bad = b.op("add", {x, y});  // shapes do not broadcast
  EXPECT_FALSE(bad);
  kiln::Node later = b.op("relu", {bad});
  EXPECT_FALSE(later);
  EXPECT_FALSE(b.op("frobnicate", {x}));
  auto g = b.finish({later});
  ASSERT_FALSE(g);
  EXPECT_NE(g.error().str().find("f32[4]"), std::string::npos) << g.error().str();

  kiln::FunctionBuilder c("main");
  kiln::Node a = c.param({kiln::DType::F32, {2}}, "a");
  EXPECT_FALSE(c.op("frobnicate", {a}));
  EXPECT_NE(c.status().error().str().find("unknown op 'frobnicate'"), std::string::npos);

  kiln::FunctionBuilder d("main");
  kiln::Node p = d.param({kiln::DType::F32, {2}}, "p");
  d.op("neg", {p});
  EXPECT_FALSE(d.param({kiln::DType::F32, {2}}, "late"));
  EXPECT_NE(d.status().error().str().find("parameters come before the first op"), std::string::npos);

  kiln::FunctionBuilder e("main");
  kiln::Node q = e.param({kiln::DType::F32, {2}}, "q");
  ASSERT_TRUE(e.finish({e.op("neg", {q})}));
  auto twice = e.finish({});
  ASSERT_FALSE(twice);
  EXPECT_NE(twice.error().str().find("finished"), std::string::npos);
}

}  // namespace
