// The compile cache: content-hash keys and the memory + disk store.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "codegen/build_identity.h"
#include "codegen/compile_cache.h"
#include "frontend/parser.h"

namespace kiln::codegen {
namespace {

std::unique_ptr<Module> parse(const std::string& text) {
  auto m = parseModule(text);
  EXPECT_TRUE(m.ok()) << m.error().str();
  return m.ok() ? std::move(*m) : nullptr;
}

const char* kProgram = "func @main(%x: f32[4]) -> f32[4] {\n  %y = exp %x\n  return %y\n}\n";

// The running build is told apart from every other: its binary's GNU build ID (Debian's linker
// writes one), which every key holds.
TEST(CacheKey, HoldsThisBuildsIdentity) {
  const std::string& id = buildIdentity();
  ASSERT_EQ(id.rfind("build-id ", 0), 0u) << id;
  EXPECT_GE(id.size(), std::string("build-id ").size() + 16) << id;
  EXPECT_EQ(&id, &buildIdentity());  // computed once
}

TEST(CacheKey, DependsOnContentAndOptionsOnly) {
  auto a = parse(kProgram);
  auto b = parse("# the same graph, formatted differently\nfunc @main(%x: f32[4]) -> f32[4] {\n %y = exp %x   : f32[4]\n return %y }\n");
  auto c = parse("func @main(%x: f32[4]) -> f32[4] {\n  %y = log %x\n  return %y\n}\n");
  CompileOptions cpu, cuda, cuda90, fast, dumped;
  cuda.target = cuda90.target = Target::Cuda;
  cuda90.gpuArch = "sm_90";
  fast.fastMath = true;
  dumped.dumpDir = "/tmp/somewhere";
  std::string key = cacheKey(*a->entry(), cpu, "obj");
  EXPECT_EQ(key.size(), 64u);
  EXPECT_EQ(key, cacheKey(*a->entry(), cpu, "obj"));
  EXPECT_EQ(key, cacheKey(*b->entry(), cpu, "obj"));     // comments and layout do not matter
  EXPECT_EQ(key, cacheKey(*a->entry(), dumped, "obj"));  // dumping does not change the artifact
  EXPECT_NE(key, cacheKey(*c->entry(), cpu, "obj"));
  EXPECT_NE(key, cacheKey(*a->entry(), cuda, "obj"));
  EXPECT_NE(cacheKey(*a->entry(), cuda, "ptx"), cacheKey(*a->entry(), cuda90, "ptx"));
  EXPECT_NE(key, cacheKey(*a->entry(), fast, "obj"));
  EXPECT_NE(key, cacheKey(*a->entry(), cpu, "asm"));
}

class CacheDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("kiln-cache-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(CacheDir, StoresInMemoryAndOnDisk) {
  std::string key(64, 'a');
  {
    CompileCache cache(dir_.string());
    EXPECT_FALSE(cache.lookup(key).has_value());
    cache.store(key, std::string("ptx\0bytes", 9));
    EXPECT_EQ(cache.lookup(key), std::string("ptx\0bytes", 9));
    EXPECT_EQ(cache.hits(), 1u);
    EXPECT_EQ(cache.misses(), 1u);
  }
  CompileCache fresh(dir_.string());  // another process, in effect
  EXPECT_EQ(fresh.lookup(key), std::string("ptx\0bytes", 9));
  // Only the entry itself is left: no temporary files.
  int files = 0;
  for (auto& e : std::filesystem::recursive_directory_iterator(dir_)) files += e.is_regular_file();
  EXPECT_EQ(files, 1);
}

TEST_F(CacheDir, MemoryOnlyWithoutDirectory) {
  CompileCache cache("");
  cache.store("k", "v");
  EXPECT_EQ(cache.lookup("k"), "v");
  EXPECT_FALSE(std::filesystem::exists(dir_));
}

TEST_F(CacheDir, ConcurrentWritersLeaveOneWholeEntry) {
  std::string key(64, 'b');
  std::string big(1 << 20, 'x');
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      CompileCache cache(dir_.string());  // separate instances share only the disk
      for (int i = 0; i < 5; ++i) cache.store(key, std::string(1 << 20, static_cast<char>('a' + t)));
    });
  for (auto& th : threads) th.join();
  CompileCache reader(dir_.string());
  auto got = reader.lookup(key);
  ASSERT_TRUE(got.has_value());
  ASSERT_EQ(got->size(), big.size());
  EXPECT_EQ(got->find_first_not_of((*got)[0]), std::string::npos);  // one writer's bytes, whole
}

TEST_F(CacheDir, UnwritableDirectoryOnlyLosesTheEntry) {
  CompileCache cache("/proc/kiln-cannot-write-here");
  cache.store("k", "v");
  EXPECT_EQ(cache.lookup("k"), "v");  // still served from memory
}

}  // namespace
}  // namespace kiln::codegen
