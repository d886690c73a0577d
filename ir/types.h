// The IR's element types, shapes and tensor types are the public API's (include/kiln/types.h).
#pragma once

#include "kiln/types.h"
