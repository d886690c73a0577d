// Control flow of one decoded function: basic blocks and immediate post-dominators, giving every
// branch the instruction where a warp split by it meets again.
#pragma once

#include "gpusim/ptx/module.h"

namespace gpusim::ptx {

// Sets Instr::reconverge of every bra in `fn` to the first instruction of the immediate
// post-dominator of the branch's block, or fn.instrs.size() when that is the virtual exit (every
// ret, exit and trap, and blocks from which no exit is reachable, lead there). Branch targets
// (Instr::target) must already be resolved.
void computeReconvergence(Function& fn);

}  // namespace gpusim::ptx
