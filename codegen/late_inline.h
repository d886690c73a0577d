// Math functions the loop vectoriser widens through vector variants of kiln's own, inlined after
// it. A kernel's float math is emitted as scalar IR, which LLVM's loop vectoriser widens; a
// formula that wants a vector-only instruction (AVX-512's vscalefps, which scales by 2^n over the
// whole float range, subnormals included, in one instruction) cannot be written that way. Such a
// function is instead a call to a scalar function that carries vector variants (LLVM's
// "vector-function-abi-variant" mapping, as for libmvec): the vectoriser replaces the call with
// the variant of its width, and after vectorisation every call to such a function is inlined, so
// no call is left in the loop.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

namespace kiln::codegen {

// Builds a function's body on `b` (positioned in its entry block) from its argument `x`, a float
// or a vector of `width` floats, and returns the result.
using MathBody = std::function<llvm::Value*(llvm::IRBuilder<>& b, llvm::Value* x)>;

// A call of `name`(x) for f32 `x`: the scalar function computes `scalar`, its vector variants of
// 4, 8 and 16 lanes `vector` (each made once per module, internal, kept alive for the
// vectoriser). The call reads no memory, so the vectoriser may widen it.
llvm::Value* callWithVectorVariants(llvm::IRBuilder<>& b, const std::string& name, llvm::Value* x, const MathBody& scalar,
                                    const MathBody& vector);

// The vector variants `call` names for the vectoriser (its "vector-function-abi-variant"
// attribute), which nothing else refers to: a module split into kernel units keeps them with the
// kernel that calls them (kernel_units.h).
std::vector<std::string> vectorVariantNames(const llvm::CallBase& call);

// Keeps the functions made by callWithVectorVariants alive until the vectoriser has seen the calls
// (llvm.compiler.used; nothing else refers to the variants). Runs before the O3 pipeline.
void keepLateFunctions(llvm::Module& module);

// Inlines every call to a function made by callWithVectorVariants and deletes those functions.
// Runs after the loop vectoriser (the end of the O3 pipeline: llvm_pipeline.h).
void inlineLateFunctions(llvm::Module& module);

}  // namespace kiln::codegen
