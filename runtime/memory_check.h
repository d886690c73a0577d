// A static check that a function's tensors fit in host memory, so that running an impossible
// program is a clear error instead of an allocation failure (or a sanitizer abort).
#pragma once

#include <cstdint>

#include "ir/ir.h"

namespace kiln {

// Physical memory of this machine in bytes.
uint64_t hostMemoryBytes();
// "4.0 TB", "23.4 GB", "512 B".
std::string formatBytes(uint64_t bytes);
// Checks every parameter and every op result of `function` (regions included) against `limit`
// bytes; the error names the value and its location.
Status checkTensorsFit(const Function& function, uint64_t limit);

}  // namespace kiln
