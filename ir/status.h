// Errors as values are the public API's (include/kiln/status.h); kiln's own code adds the
// internal-error check and KILN_TRY here.
#pragma once

#include <string>

#include "kiln/status.h"

namespace kiln {

// Internal invariant violated: a bug in kiln, never the user's fault. Prints and aborts.
[[noreturn]] void internalError(const char* file, int line, const std::string& what);

}  // namespace kiln

#define KILN_INTERNAL_CHECK(cond, what) \
  do {                                  \
    if (!(cond)) ::kiln::internalError(__FILE__, __LINE__, (what)); \
  } while (0)

// Propagates a failed Status / Expected to the caller.
#define KILN_TRY(expr)                           \
  do {                                           \
    auto kiln_try_status_ = (expr);              \
    if (!kiln_try_status_.ok()) return kiln_try_status_.error(); \
  } while (0)
