// The CPU emulator stands in for the CUDA runtime header (see cuda_emulator.h).
#pragma once
#include "cuda_emulator.h"
