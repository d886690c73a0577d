// The pass convention: a pass rewrites a Module in place and reports whether it changed anything.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ir/ir.h"

namespace kiln::passes {

// What a pass returns (as in XLA's HloPassInterface): true if it changed the module, false if it
// left it alone, or an Error. The pass manager verifies the module after every pass, so passes
// themselves need not.
using PassResult = Expected<bool>;

// A note on a decision a pass made that a user may want to know about: why a `map` stayed a loop,
// why two ops were not fused (LLVM's optimisation remarks). `kiln explain` prints them.
struct Remark {
  std::string pass;     // "vectorize"
  std::string op;       // the op the remark is about, as "map" or "add -> reduce_sum"
  SourceLoc loc;        // where that op is written
  std::string message;  // "stays a loop: while's trip count depends on the mapped element"
};

// The device a pipeline compiles for, where a pass's choice depends on it (the fusion pass: on the
// CPU no library takes f64 matmuls and convolutions, so their epilogues fuse); Any where none was
// given (`kiln opt`, a test's own pass), which decides as for the GPU.
enum class PassTarget { Any, Cpu, Gpu };

// What the pass manager hands every pass besides the module.
class PassContext {
 public:
  explicit PassContext(std::string_view pass = {}, PassTarget target = PassTarget::Any) : pass_(pass), target_(target) {}
  PassTarget target() const { return target_; }
  void remark(const Op& op, std::string message) { remark(std::string(op.name()), op.loc(), std::move(message)); }
  void remark(std::string op, SourceLoc loc, std::string message) {
    remarks_.push_back({std::string(pass_), std::move(op), std::move(loc), std::move(message)});
  }
  const std::vector<Remark>& remarks() const { return remarks_; }
  std::vector<Remark> takeRemarks() { return std::move(remarks_); }
  void setPass(std::string_view pass) { pass_ = pass; }

 private:
  std::string_view pass_;
  PassTarget target_;
  std::vector<Remark> remarks_;
};

using PassFn = PassResult (*)(Module&, PassContext&);

// One entry of the pass registry: what `kiln opt --passes=` and `--list-passes` see.
struct PassInfo {
  std::string_view name;         // "cse"
  std::string_view description;  // one line
  PassFn run;
};

}  // namespace kiln::passes
