// Modules and functions: PTX loaded through the parser (CU_JIT_ERROR_LOG_BUFFER gets its
// "line N: ..." log), kernels looked up by name, their attributes, and occupancy from registers,
// shared memory and block size (H100 SXM limits).
#include <algorithm>
#include <cstring>

#include "gpusim/driver/state.h"

namespace gpusim::driver {

namespace {

// Copies `log` into a JIT log buffer (always NUL-terminated) and reports the bytes used back through
// the size option, as the real driver does.
void fillLog(const std::string& log, char* buffer, void** sizeSlot) {
  if (!buffer || !sizeSlot) return;
  auto capacity = reinterpret_cast<uintptr_t>(*sizeSlot);
  if (capacity == 0) return;
  size_t n = std::min<size_t>(log.size(), capacity - 1);
  std::memcpy(buffer, log.data(), n);
  buffer[n] = '\0';
  *sizeSlot = reinterpret_cast<void*>(static_cast<uintptr_t>(n + 1));
}

// What ptxas would refuse that the parser accepts.
std::string checkForDevice(const ptx::Module& m) {
  if (m.smVersion > 90)
    return "line 1: error: .target sm_" + std::to_string(m.smVersion) + " is newer than the device (sm_90)\n";
  if (m.staticSharedBytes > kH100.maxStaticSharedPerBlock)
    return "error: the module uses " + std::to_string(m.staticSharedBytes) + " bytes of static shared memory, more than the " +
           std::to_string(kH100.maxStaticSharedPerBlock) + " a block may declare\n";
  return {};
}

}  // namespace

int maxThreadsPerBlock(const CUfunc_st& f) {
  uint32_t limit = kH100.maxThreadsPerBlock;
  const ptx::Function& p = f.ptx();
  for (const uint32_t* dims : {p.maxntid, p.reqntid})
    if (dims[0]) limit = std::min(limit, dims[0] * std::max(dims[1], 1u) * std::max(dims[2], 1u));
  // The register file bounds the block too: the most whole warps of its registers one SM holds.
  while (limit > 0 && gpusim::blocksPerSm(limit, f.registers, 0) == 0) limit = (limit - 1) / 32 * 32;
  return static_cast<int>(limit);
}

int blocksPerSm(const CUfunc_st& f, int blockSize, size_t dynamicShared) {
  if (blockSize <= 0 || blockSize > maxThreadsPerBlock(f) || dynamicShared > kH100.maxSharedPerBlockOptIn) return 0;
  return static_cast<int>(gpusim::blocksPerSm(static_cast<uint32_t>(blockSize), f.registers,
                                              f.loaded->ptx.staticSharedBytes + static_cast<uint32_t>(dynamicShared)));
}

}  // namespace gpusim::driver

using namespace gpusim::driver;

GPUSIM_EXPORT CUresult cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned int numOptions,
                                          CUjit_option* options, void** optionValues) {
  if (!module || !image || (numOptions && (!options || !optionValues))) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* ctx = nullptr;
  if (CUresult r = enter(ctx)) return r;
  char *errorLog = nullptr, *infoLog = nullptr;
  void **errorSize = nullptr, **infoSize = nullptr;
  for (unsigned i = 0; i < numOptions; ++i) {
    switch (options[i]) {
      case CU_JIT_ERROR_LOG_BUFFER: errorLog = static_cast<char*>(optionValues[i]); break;
      case CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES: errorSize = &optionValues[i]; break;
      case CU_JIT_INFO_LOG_BUFFER: infoLog = static_cast<char*>(optionValues[i]); break;
      case CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES: infoSize = &optionValues[i]; break;
      default: break;  // optimisation level, verbosity, target...: nothing to compile here
    }
  }
  std::string log;
  std::shared_ptr<gpusim::LoadedModule> loaded =
      gpusim::loadModule(static_cast<const char*>(image), *ctx->device->memory, log);
  if (loaded && log.empty()) log = checkForDevice(loaded->ptx);
  if (!loaded || !log.empty()) {
    fillLog(log, errorLog, errorSize);
    fillLog("", infoLog, infoSize);
    return fail(CUDA_ERROR_INVALID_PTX, "cuModuleLoadDataEx: the PTX does not load:\n" + log);
  }
  auto* m = new CUmod_st;
  m->ctx = ctx;
  m->loaded = loaded;
  std::string info;
  for (uint32_t i = 0; i < loaded->ptx.functions.size(); ++i) {
    const gpusim::ptx::Function& f = loaded->ptx.functions[i];
    if (!f.isEntry) continue;
    auto fn = std::make_unique<CUfunc_st>();
    fn->module = m;
    fn->loaded = loaded;
    fn->index = i;
    fn->registers = gpusim::registersPerThread(f);
    fn->maxDynamicShared = static_cast<int>(gpusim::kH100.maxStaticSharedPerBlock - loaded->ptx.staticSharedBytes);
    info += "gpusim info: function " + f.name + ": " + std::to_string(fn->registers) + " registers (.reg declarations), " +
            std::to_string(loaded->ptx.staticSharedBytes) + " bytes smem, " + std::to_string(f.localBytes) + " bytes lmem\n";
    m->functions.push_back(std::move(fn));
  }
  fillLog("", errorLog, errorSize);
  fillLog(info, infoLog, infoSize);
  *module = m;
  return CUDA_SUCCESS;
}

GPUSIM_EXPORT CUresult cuModuleLoadData(CUmodule* module, const void* image) {
  return cuModuleLoadDataEx(module, image, 0, nullptr, nullptr);
}

GPUSIM_EXPORT CUresult cuModuleUnload(CUmodule hmod) {
  if (!hmod) return CUDA_ERROR_INVALID_HANDLE;
  CUctx_st* ctx = hmod->ctx;
  CUresult r = enter(ctx);
  delete hmod;  // queued launches keep the decoded module and its globals alive
  return r;
}

GPUSIM_EXPORT CUresult cuModuleGetFunction(CUfunction* hfunc, CUmodule hmod, const char* name) {
  if (!hfunc || !name) return CUDA_ERROR_INVALID_VALUE;
  if (!hmod) return CUDA_ERROR_INVALID_HANDLE;
  CUctx_st* ctx = hmod->ctx;
  if (CUresult r = enter(ctx)) return r;
  std::string known;
  for (const auto& f : hmod->functions) {
    if (f->name() == name) {
      *hfunc = f.get();
      return CUDA_SUCCESS;
    }
    known += (known.empty() ? "" : ", ") + f->name();
  }
  return fail(CUDA_ERROR_NOT_FOUND, std::string("cuModuleGetFunction: the module has no kernel named '") + name +
                                        "' (its kernels: " + (known.empty() ? "none" : known) + ")");
}

GPUSIM_EXPORT CUresult cuFuncGetAttribute(int* pi, CUfunction_attribute attrib, CUfunction hfunc) {
  if (!pi) return CUDA_ERROR_INVALID_VALUE;
  if (!hfunc) return CUDA_ERROR_INVALID_HANDLE;
  const gpusim::ptx::Module& m = hfunc->loaded->ptx;
  switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = maxThreadsPerBlock(*hfunc); break;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *pi = static_cast<int>(m.staticSharedBytes); break;
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES: {
      uint64_t bytes = 0;
      for (const gpusim::ptx::Variable& v : m.variables)
        if (v.space == gpusim::ptx::Space::Const) bytes += v.size;
      *pi = static_cast<int>(bytes);
      break;
    }
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: *pi = static_cast<int>(hfunc->ptx().localBytes); break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *pi = static_cast<int>(hfunc->registers); break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION: *pi = static_cast<int>(m.smVersion); break;  // the .target's sm
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *pi = 90; break;
    case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA: *pi = 0; break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *pi = hfunc->maxDynamicShared; break;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: *pi = hfunc->carveout; break;
    default:
      if (attrib < 0 || attrib >= CU_FUNC_ATTRIBUTE_MAX) return CUDA_ERROR_INVALID_VALUE;
      *pi = 0;  // clusters: none required
  }
  return CUDA_SUCCESS;
}

GPUSIM_EXPORT CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value) {
  if (!hfunc) return CUDA_ERROR_INVALID_HANDLE;
  int staticShared = static_cast<int>(hfunc->loaded->ptx.staticSharedBytes);
  switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
      if (value < 0 || value + staticShared > static_cast<int>(gpusim::kH100.maxSharedPerBlockOptIn))
        return fail(CUDA_ERROR_INVALID_VALUE, "cuFuncSetAttribute: " + hfunc->name() + " may use at most " +
                                                  std::to_string(static_cast<int>(gpusim::kH100.maxSharedPerBlockOptIn) - staticShared) +
                                                  " bytes of dynamic shared memory (227 KB less its static " +
                                                  std::to_string(staticShared) + "), not " + std::to_string(value));
      hfunc->maxDynamicShared = value;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
      if (value < -1 || value > 100) return CUDA_ERROR_INVALID_VALUE;
      hfunc->carveout = value;
      return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;  // read-only, or clusters (not simulated)
  }
}

GPUSIM_EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int* numBlocks, CUfunction func, int blockSize,
                                                                   size_t dynamicSMemSize) {
  if (!numBlocks) return CUDA_ERROR_INVALID_VALUE;
  if (!func) return CUDA_ERROR_INVALID_HANDLE;
  CUctx_st* ctx = func->module ? func->module->ctx : nullptr;
  if (CUresult r = enter(ctx)) return r;
  *numBlocks = blocksPerSm(*func, blockSize, dynamicSMemSize);
  return CUDA_SUCCESS;
}
