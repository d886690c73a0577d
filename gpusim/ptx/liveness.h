// Register pressure of a decoded function: the most 32-bit register words live at any one
// instruction, from a backward liveness analysis over its instructions. NVPTX declares one
// virtual register per value, so the .reg declarations overstate what ptxas allocates many times
// over; the registers live at once are close to what it does allocate.
#pragma once

#include <cstdint>

#include "gpusim/ptx/module.h"

namespace gpusim::ptx {

// Predicates are not counted (they live in their own register file); a 64-bit register counts two
// words, a 128-bit one four. A def under a guard does not end the register's previous value.
uint32_t maxLiveRegisterWords(const Function& fn);

}  // namespace gpusim::ptx
