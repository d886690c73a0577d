// Device tensors are part of the public API (include/kiln/device_tensor.h).
#pragma once

#include "kiln/device_tensor.h"
