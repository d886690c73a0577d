// Vectorised math on the CPU: glibc's libmvec (the vector variants of expf, logf, sinf, cosf, powf,
// tanhf, erff, ... at 4 and 8 lanes) offered to LLVM's loop vectoriser through its library-info
// mappings, so a fused kernel with a tanh or an exp vectorises instead of calling libm one element
// at a time. glibc documents libmvec's functions as accurate to 4 ulp
// (tests/unit/codegen/vector_math_test.cpp measures every one against a double reference).
#pragma once

#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/TargetParser/Triple.h>

namespace kiln::codegen {

// Whether libmvec is loaded into this process (loading it on the first call): x86-64 Linux with
// glibc. Elsewhere kernels call the scalar functions.
bool vectorMathAvailable();

// The library info the CPU's O3 pipeline uses: `triple`'s, plus libmvec's vector variants of every
// function kiln emits that this libmvec exports.
const llvm::TargetLibraryInfoImpl& cpuLibraryInfo(const llvm::Triple& triple);

}  // namespace kiln::codegen
