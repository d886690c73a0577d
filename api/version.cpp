#include "kiln/version.h"

namespace kiln {

const char* version() { return KILN_VERSION_STRING; }

}  // namespace kiln
