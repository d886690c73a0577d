# lit configuration: .kiln files with RUN: lines, checked with FileCheck (as LLVM and MLIR test).
import os
import platform
import sys
import lit.formats

config.name = "kiln"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".kiln", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(os.path.dirname(config.kiln_bin_dir), "tests", "lit-out")
config.excludes = ["Inputs"]

config.environment["PATH"] = os.pathsep.join(
    [config.kiln_bin_dir, config.llvm_tools_dir, config.environment.get("PATH", "")])
# Compile-cache entries go under the lit output dir, never into the user's ~/.cache/kiln.
config.environment["KILN_CACHE_DIR"] = os.path.join(config.test_exec_root, "kiln-cache")
# Sanitizer builds: leaks are findings, and reports should name source lines. The driver override
# and the GPU simulator's knobs pass through, so ctest's simulated GPU reaches every RUN line.
for var in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "KILN_CUDA_DRIVER", "KILN_GPUSIM_DEVICES", "KILN_GPUSIM_BUDGET",
            "KILN_GPUSIM_CHECKS"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
# The Python that runs lit (the one CMake found) also runs the NumPy reference scripts.
config.substitutions.append(("%python", sys.executable))
config.substitutions.append(("%examples", os.path.join(config.kiln_source_dir, "examples")))
config.substitutions.append(("%inputs", os.path.join(config.test_source_root, "Inputs")))

# `cuda-gpu` where the driver kiln loads sees a GPU (as kiln's own check: cuInit, then a device
# count above 0): the NVIDIA driver, or the simulator KILN_CUDA_DRIVER names (then also `gpusim`).
# `nvidia-driver` where libcuda.so.1 itself sees a GPU. Tests of the no-GPU messages unset
# KILN_CUDA_DRIVER and say `UNSUPPORTED: nvidia-driver`; GPU runs say `REQUIRES: cuda-gpu`.
def _has_cuda_gpu(library):
    import ctypes
    try:
        cuda = ctypes.CDLL(library)
        count = ctypes.c_int(0)
        return cuda.cuInit(0) == 0 and cuda.cuDeviceGetCount(ctypes.byref(count)) == 0 and count.value > 0
    except OSError:
        return False

if _has_cuda_gpu(os.environ.get("KILN_CUDA_DRIVER") or "libcuda.so.1"):
    config.available_features.add("cuda-gpu")
if "gpusim" in os.path.basename(os.environ.get("KILN_CUDA_DRIVER", "")):
    config.available_features.add("gpusim")
    # The simulated driver's path: a library that is not the one a test names it as.
    config.substitutions.append(("%cuda_driver", os.environ["KILN_CUDA_DRIVER"]))
if _has_cuda_gpu("libcuda.so.1"):
    config.available_features.add("nvidia-driver")

# The CUDA toolkit (for its link-stub libcuda, which must be refused as a driver).
cuda_home = os.environ.get("KILN_CUDA_HOME") or "/usr/local/cuda"
config.substitutions.append(("%cuda_home", cuda_home))
if os.path.exists(os.path.join(cuda_home, "lib64", "stubs", "libcuda.so")):
    config.available_features.add("cuda-stub")

# glibc's vector math library (x86-64 Linux), which CPU kernels call for libm functions
# (codegen/vector_math.h); elsewhere they call scalar libm.
import ctypes.util
if platform.machine() == "x86_64" and ctypes.util.find_library("mvec"):
    config.available_features.add("libmvec")

# ONNX import tests need the importer built (libonnx-dev, protobuf), protoc to encode their
# text-format models, and the ONNX backend test data (libonnx-testdata).
if config.kiln_have_onnx == "ON" and config.protoc and os.path.isdir(config.onnx_node_tests):
    config.available_features.add("onnx")
    config.substitutions.append(("%onnx_node", config.onnx_node_tests))
    # Encodes a text-format ModelProto (Inputs/*.textproto) into a binary .onnx file.
    config.substitutions.append(
        ("%encode_onnx", config.protoc + " --encode=onnx.ModelProto -I/usr/include onnx/onnx.proto"))
    # Encodes a text-format TensorProto into a binary .pb file (what --input and --value read).
    config.substitutions.append(
        ("%encode_tensor_pb", config.protoc + " --encode=onnx.TensorProto -I/usr/include onnx/onnx.proto"))
