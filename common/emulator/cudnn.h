// The CPU emulator stands in for cuDNN's header (see cudnn_emulated.h).
#pragma once
#include "cudnn_emulated.h"
