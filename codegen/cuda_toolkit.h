// Where the CUDA toolkit's build-time pieces live (libdevice, ptxas): kiln needs no GPU to find
// them, only the toolkit's files.
#pragma once

#include <string>

#include "ir/status.h"

namespace kiln::codegen {

// The toolkit root: $KILN_CUDA_HOME if set (and then only it, so a test or a user can point kiln
// at another toolkit and get an error rather than a silent fallback), else the toolkit CMake found
// at build time, else /usr/local/cuda.
std::string cudaHome();

// $CUDA/nvvm/libdevice/libdevice.10.bc (one file for every arch since CUDA 9), or an error that
// says where kiln looked and how to point it elsewhere.
Expected<std::string> findLibdevice();

// ptxas from $KILN_CUDA_HOME/bin, the build-time toolkit, /usr/local/cuda/bin, then PATH; an error
// naming those places if none has it.
Expected<std::string> findPtxas();

}  // namespace kiln::codegen
