// The interpreter test fixture: loads PTX snippets into a DeviceMemory, uploads and downloads
// buffers, and launches kernels with 64-bit arguments.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "gpusim/exec/launch.h"
#include "gpusim/exec/loaded_module.h"

namespace gpusim {

constexpr const char* kHeader = ".version 7.8\n.target sm_80\n.address_size 64\n\n";

class Interpreter : public ::testing::Test {
 protected:
  DeviceMemory memory{uint64_t{1} << 32};

  std::unique_ptr<LoadedModule> load(const std::string& body) {
    std::string log;
    auto m = loadModule(std::string(kHeader) + body, memory, log);
    EXPECT_TRUE(m) << log;
    return m;
  }
  // The load log of a module that must fail to load.
  std::string loadError(const std::string& body) {
    std::string log;
    auto m = loadModule(std::string(kHeader) + body, memory, log);
    EXPECT_FALSE(m) << "the module loaded";
    return log;
  }
  template <class T>
  uint64_t upload(const std::vector<T>& v) {
    uint64_t a = memory.allocate(v.size() * sizeof(T), "test buffer");
    Allocation* alloc = memory.find(a, v.size() * sizeof(T));
    std::memcpy(alloc->host(a), v.data(), v.size() * sizeof(T));
    alloc->markWritten(a, v.size() * sizeof(T));
    return a;
  }
  uint64_t output(size_t bytes) {
    uint64_t a = memory.allocate(bytes, "test output");
    return a;
  }
  template <class T>
  std::vector<T> download(uint64_t a, size_t n) {
    std::vector<T> v(n);
    std::memcpy(v.data(), memory.find(a, n * sizeof(T))->host(a), n * sizeof(T));
    return v;
  }
  LaunchResult run(const LoadedModule& m, const char* kernel, Dim3 grid, Dim3 block, std::vector<uint64_t> args,
                   uint32_t dynamicShared = 0, uint64_t budget = 0) {
    LaunchRequest r;
    r.module = &m;
    r.function = static_cast<uint32_t>(m.functionIndex(kernel));
    r.grid = grid;
    r.block = block;
    r.dynamicSharedBytes = dynamicShared;
    r.params.resize(args.size() * 8);
    if (!args.empty()) std::memcpy(r.params.data(), args.data(), r.params.size());
    LaunchOptions o;
    o.instructionBudget = budget;
    return launch(r, memory, o);
  }
};

}  // namespace gpusim
