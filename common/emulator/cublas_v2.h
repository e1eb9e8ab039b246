// The CPU emulator stands in for cuBLAS's header (see cublas_emulated.h).
#pragma once
#include "cublas_emulated.h"
