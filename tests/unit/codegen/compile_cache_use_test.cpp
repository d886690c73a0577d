// The compile cache in use: the CPU backend's host objects and `kiln compile`'s PTX, each test
// with its own cache directory (explicit CompileCache instances, never the global one).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "codegen/compile_stages.h"
#include "codegen/cpu_compiler.h"
#include "codegen/cuda_compiler.h"
#include "tests/unit/codegen/cpu_test_util.h"

namespace kiln::test {
namespace {

using codegen::CompileCache;
using codegen::CompileOptions;

const char* kProgram =
    "func @main(%x: f32[8,16], %w: f32[16,4]) -> f32[8,4] {\n"
    "  %h = matmul %x, %w\n"
    "  %y = relu %h\n"
    "  return %y\n"
    "}\n";

class CacheUse : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("kiln-cache-use-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    module_ = parseOrFail(kProgram);
    ASSERT_TRUE(module_);
    inputs_ = randomInputs(f(), 3);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  const Function& f() const { return *module_->entry(); }
  // kProgram is one kernel (the matmul with its relu epilogue): one object, one key.
  std::string key(const CompileOptions& options = {}) const {
    std::vector<std::string> keys = codegen::cpuObjectCacheKeys(f(), options);
    EXPECT_EQ(keys.size(), 1u);
    return keys.empty() ? std::string() : keys[0];
  }
  // Where the cache keeps `key` (CompileCache's two-character fan-out).
  std::filesystem::path entryFile(const std::string& key) const { return dir_ / key.substr(0, 2) / key.substr(2); }

  // Compiles through `cache`, runs, and checks the result against the interpreter.
  std::vector<Tensor> compileAndRun(CompileCache& cache, const CompileOptions& options = {}) {
    auto exe = Executable::compile(f(), options, &cache);
    EXPECT_TRUE(exe.ok()) << exe.error().str();
    if (!exe.ok()) return {};
    auto got = (*exe)->run(inputs_);
    EXPECT_TRUE(got.ok()) << got.error().str();
    if (!got.ok()) return {};
    auto want = interpret(f(), inputs_);
    EXPECT_EQ(compareTensors((*want)[0], (*got)[0], accumulateTolerance()), "");
    return *got;
  }

  std::filesystem::path dir_;
  std::unique_ptr<Module> module_;
  std::vector<Tensor> inputs_;
};

bool isElf(const std::string& bytes) { return bytes.rfind("\x7f" "ELF", 0) == 0; }

TEST_F(CacheUse, SecondCpuCompileIsAHitWithIdenticalResults) {
  CompileCache cache(dir_.string());
  std::vector<Tensor> first = compileAndRun(cache);
  EXPECT_EQ(cache.misses(), 1u);
  EXPECT_EQ(cache.hits(), 0u);
  std::vector<Tensor> second = compileAndRun(cache);
  EXPECT_EQ(cache.hits(), 1u);
  EXPECT_EQ(cache.misses(), 1u);
  EXPECT_EQ(first, second);  // bit for bit: the same machine code

  // Another process, in effect: the entry comes from disk, and O3 and codegen are skipped.
  CompileCache fresh(dir_.string());
  auto object = codegen::compileCpuObject(f(), {}, &fresh);
  ASSERT_TRUE(object.ok()) << object.error().str();
  EXPECT_EQ(object->objectsFromCache, 1u);
  ASSERT_EQ(object->objects.size(), 1u);
  EXPECT_TRUE(isElf(object->objects[0]));
  EXPECT_EQ(fresh.hits(), 1u);
  EXPECT_EQ(compileAndRun(fresh), first);
}

TEST_F(CacheUse, OtherOptionsOrGraphMiss) {
  CompileCache cache(dir_.string());
  compileAndRun(cache);
  CompileOptions fast;
  fast.fastMath = true;
  auto exe = Executable::compile(f(), fast, &cache);
  ASSERT_TRUE(exe.ok()) << exe.error().str();
  auto other = parseOrFail("func @main(%x: f32[8,16]) -> f32[8,16] {\n  %y = exp %x\n  return %y\n}\n");
  auto exe2 = Executable::compile(*other->entry(), {}, &cache);
  ASSERT_TRUE(exe2.ok()) << exe2.error().str();
  EXPECT_EQ(cache.hits(), 0u);
  EXPECT_EQ(cache.misses(), 3u);
  EXPECT_NE(key(), key(fast));
}

TEST_F(CacheUse, GarbageInTheEntryFileIsRecompiledAndReplaced) {
  std::vector<Tensor> want;
  {
    CompileCache cache(dir_.string());
    want = compileAndRun(cache);
  }
  std::filesystem::path file = entryFile(key());
  ASSERT_TRUE(std::filesystem::exists(file));
  std::ofstream(file, std::ios::binary | std::ios::trunc) << "not an object file";
  CompileCache cache(dir_.string());
  EXPECT_EQ(compileAndRun(cache), want);
  EXPECT_EQ(cache.misses(), 1u);  // the damaged file is a miss, not a hit
  CompileCache after(dir_.string());
  auto entry = after.lookup(key());
  ASSERT_TRUE(entry.has_value());
  EXPECT_TRUE(isElf(*entry));
}

TEST_F(CacheUse, TruncatedEntryFileIsRecompiled) {
  { CompileCache cache(dir_.string()); compileAndRun(cache); }
  std::filesystem::path file = entryFile(key());
  std::filesystem::resize_file(file, std::filesystem::file_size(file) / 2);
  CompileCache cache(dir_.string());
  compileAndRun(cache);
  EXPECT_EQ(cache.misses(), 1u);
}

// An entry whose checksum is right but which LLVM cannot load (written by a buggy or different
// kiln): the JIT rejects it, and compile recompiles and overwrites it.
TEST_F(CacheUse, ObjectTheJitRejectsIsRecompiledAndReplaced) {
  std::string entry = key();
  CompileCache good(dir_.string());
  std::vector<Tensor> want = compileAndRun(good);
  std::string object = *good.lookup(entry);
  for (std::string bad : {std::string("garbage"), object.substr(0, object.size() / 2), std::string()}) {
    SCOPED_TRACE("entry of " + std::to_string(bad.size()) + " bytes");
    CompileCache cache(dir_.string());
    cache.store(entry, bad);
    EXPECT_EQ(compileAndRun(cache), want);
    EXPECT_EQ(cache.hits(), 1u);  // the bad entry was found ...
    EXPECT_EQ(cache.lookup(entry), object);  // ... and replaced with a good one
    EXPECT_EQ(CompileCache(dir_.string()).lookup(entry), object);
  }
}

TEST_F(CacheUse, DumpDirBypassesTheLookupAndDumpsEveryStage) {
  CompileCache cache(dir_.string());
  compileAndRun(cache);
  CompileOptions dumping;
  dumping.dumpDir = (dir_ / "dump").string();
  compileAndRun(cache, dumping);
  EXPECT_EQ(cache.hits(), 0u);
  for (const char* name : {"kernels.txt", "main.unopt.ll", "main.opt.ll", "main.s"})
    EXPECT_TRUE(std::filesystem::exists(dir_ / "dump" / name)) << name;
}

TEST_F(CacheUse, PtxHitIsByteIdentical) {
  CompileOptions cuda;
  cuda.target = codegen::Target::Cuda;
  // No transcendental functions: libdevice need not be installed.
  auto m = parseOrFail("func @main(%x: f32[8,16], %w: f32[16,4]) -> f32[8,4] {\n  %h = matmul %x, %w\n  %y = add %h, %h\n  return %y\n}\n");
  CompileCache cache(dir_.string());
  auto first = codegen::compileStages(*m->entry(), cuda, &cache);
  ASSERT_TRUE(first.ok()) << first.error().str();
  EXPECT_EQ(cache.misses(), 1u);
  EXPECT_FALSE(first->optimizedIR.empty());
  auto second = codegen::compileStages(*m->entry(), cuda, &cache);
  ASSERT_TRUE(second.ok()) << second.error().str();
  EXPECT_EQ(cache.hits(), 1u);
  EXPECT_EQ(second->code, first->code);
  EXPECT_TRUE(second->optimizedIR.empty());  // O3 was skipped
  EXPECT_EQ(second->kernels, first->kernels);
  EXPECT_EQ(second->unoptimizedIR, first->unoptimizedIR);

  CompileCache fresh(dir_.string());  // from disk
  auto third = codegen::compileStages(*m->entry(), cuda, &fresh);
  ASSERT_TRUE(third.ok()) << third.error().str();
  EXPECT_EQ(fresh.hits(), 1u);
  EXPECT_EQ(third->code, first->code);

  CompileOptions sm90 = cuda;
  sm90.gpuArch = "sm_90";
  auto other = codegen::compileStages(*m->entry(), sm90, &fresh);
  ASSERT_TRUE(other.ok()) << other.error().str();
  EXPECT_EQ(fresh.misses(), 1u);
  EXPECT_NE(other->code, first->code);

  auto uncached = codegen::compileStages(*m->entry(), cuda, nullptr);
  ASSERT_TRUE(uncached.ok());
  EXPECT_EQ(uncached->code, first->code);
}

// PTX that links libdevice depends on it: without libdevice the compile fails as uncached, it is
// not served from an entry made with it.
TEST_F(CacheUse, PtxKeyCoversLibdevice) {
  CompileOptions cuda;
  cuda.target = codegen::Target::Cuda;
  auto m = parseOrFail("func @main(%x: f32[8]) -> f32[8] {\n  %y = exp %x\n  return %y\n}\n");
  CompileCache cache(dir_.string());
  auto with = codegen::compileStages(*m->entry(), cuda, &cache);
  if (!with.ok()) GTEST_SKIP() << "no libdevice here: " << with.error().str();
  EXPECT_EQ(cache.misses(), 1u);
  std::string home = (dir_ / "empty-toolkit").string();
  std::filesystem::create_directories(home);
  const char* old = std::getenv("KILN_CUDA_HOME");
  std::string saved = old ? old : "";
  setenv("KILN_CUDA_HOME", home.c_str(), 1);
  auto without = codegen::compileStages(*m->entry(), cuda, &cache);
  if (old) setenv("KILN_CUDA_HOME", saved.c_str(), 1);
  else unsetenv("KILN_CUDA_HOME");
  ASSERT_FALSE(without.ok());
  EXPECT_NE(without.error().message().find("libdevice not found"), std::string::npos) << without.error().str();
  EXPECT_EQ(cache.hits(), 0u);
}

// Two versions of a small network that differ in their last layer only (sigmoid or tanh).
std::string layers(const char* lastActivation) {
  return std::string("func @main(%x: f32[16,32], %w: f32[32,32]) -> (f32[16,32], f32[16,1]) {\n"
                     "  %h = matmul %x, %w\n"
                     "  %t = tanh %h\n"
                     "  %m = reduce_max %t {axes = [1], keepdims = true}\n"
                     "  %e = sub %t, %m\n"
                     "  %g = matmul %e, %w\n"
                     "  %s = ") +
         lastActivation + " %g\n  return %s, %m\n}\n";
}

// The cache works per kernel: a change to one layer recompiles that layer's kernel and takes the
// others from the cache, and the result is still the interpreter's.
TEST_F(CacheUse, ChangingOneLayerRecompilesOneCpuKernel) {
  auto before = parseOrFail(layers("sigmoid"));
  auto after = parseOrFail(layers("tanh"));
  std::vector<std::string> keysBefore = codegen::cpuObjectCacheKeys(*before->entry(), {});
  std::vector<std::string> keysAfter = codegen::cpuObjectCacheKeys(*after->entry(), {});
  ASSERT_GE(keysBefore.size(), 3u);
  ASSERT_EQ(keysAfter.size(), keysBefore.size());
  size_t same = 0;
  for (size_t i = 0; i < keysBefore.size(); ++i) same += keysBefore[i] == keysAfter[i];
  EXPECT_EQ(same, keysBefore.size() - 1);  // only the last kernel's code changed

  CompileCache cache(dir_.string());
  ASSERT_TRUE(Executable::compile(*before->entry(), {}, &cache).ok());
  EXPECT_EQ(cache.misses(), keysBefore.size());
  auto exe = Executable::compile(*after->entry(), {}, &cache);
  ASSERT_TRUE(exe.ok()) << exe.error().str();
  EXPECT_EQ(cache.hits(), keysBefore.size() - 1);
  EXPECT_EQ(cache.misses(), keysBefore.size() + 1);
  std::vector<Tensor> inputs = randomInputs(*after->entry(), 5);
  auto want = interpret(*after->entry(), inputs);
  auto got = (*exe)->run(inputs);
  ASSERT_TRUE(want.ok() && got.ok());
  for (size_t k = 0; k < want->size(); ++k)
    EXPECT_EQ(compareTensors((*want)[k], (*got)[k], accumulateTolerance()), "") << "result " << k;
}

// The runtime's PTX is one module per distinct kernel, each cached on its own (no GPU needed).
TEST_F(CacheUse, ChangingOneLayerRecompilesOnePtxModule) {
  CompileOptions cuda;
  cuda.target = codegen::Target::Cuda;
  auto before = parseOrFail(layers("sigmoid"));
  auto after = parseOrFail(layers("relu"));  // no libdevice call: runs where libdevice is missing
  CompileCache cache(dir_.string());
  auto first = codegen::compileForCuda(*before->entry(), cuda, &cache);
  if (!first.ok() && first.error().message().find("libdevice") != std::string::npos)
    GTEST_SKIP() << "no libdevice here: " << first.error().str();
  ASSERT_TRUE(first.ok()) << first.error().str();
  size_t n = first->modules.size();
  ASSERT_GE(n, 3u);
  EXPECT_EQ(cache.misses(), n);
  for (const codegen::PtxModule& m : first->modules) {
    ASSERT_EQ(m.kernels.size(), 1u);
    EXPECT_NE(m.ptx.find(".entry " + m.kernels[0]), std::string::npos) << m.ptx;
  }
  auto second = codegen::compileForCuda(*after->entry(), cuda, &cache);
  ASSERT_TRUE(second.ok()) << second.error().str();
  EXPECT_EQ(second->modulesFromCache, n - 1);
  EXPECT_EQ(cache.misses(), n + 1);
  for (size_t i = 0; i + 1 < n; ++i) EXPECT_EQ(second->modules[i].ptx, first->modules[i].ptx);
  EXPECT_NE(second->modules[n - 1].ptx, first->modules[n - 1].ptx);
}

}  // namespace
}  // namespace kiln::test
