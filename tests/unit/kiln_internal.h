// kiln's internal C++ API in one header, for the tests: build or parse a graph, verify and print
// it, run it. Users include the public API, <kiln/kiln.h> (docs/api.md), instead.
//
//   auto module = kiln::parseFile("examples/mlp.kiln");
//   if (!module) { std::cerr << module.error().str() << "\n"; return 1; }
//   kiln::Function* f = (*module)->entry();
//   auto exe = kiln::Executable::compile(*f, {.target = kiln::codegen::Target::Cpu});
//   auto results = (*exe)->run(inputs);
//
// compile() runs the pass pipeline on a copy of *f; CompileOptions::disabledPasses skips passes
// by name ({"fusion"}) or all of them ({"all"}), e.g. to compare results with and without.
//
// See docs/api.md for a tour and docs/ir.md for the IR's semantics.
#pragma once

#include "codegen/compile_options.h"
#include "frontend/parser.h"
#include "ir/builder.h"
#include "ir/interp/interpreter.h"
#include "ir/ir.h"
#include "ir/npy.h"
#include "ir/printer.h"
#include "ir/tensor.h"
#include "ir/verifier.h"
#include "runtime/backend.h"
#include "runtime/executable.h"
#include "runtime/random_inputs.h"
#include "runtime/train_session.h"
