// Which build of kiln is running: the GNU build ID of the binary that holds kiln's code (the kiln
// tool, or a program linking the kiln libraries), a hash the linker computes over the whole linked
// output. The compile cache puts it in every key, so a rebuilt kiln never reuses objects an older
// build compiled from the same input (a codegen change needs no manual version bump to be safe).
#pragma once

#include <string>

namespace kiln::codegen {

// The build ID in hex; where the binary has none, its size and modification time.
const std::string& buildIdentity();

}  // namespace kiln::codegen
