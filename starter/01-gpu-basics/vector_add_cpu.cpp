// Lab 01, TODO 7: the same vector operation on the CPU, for the CPU vs GPU comparison.
#include "gpu_basics.h"

namespace lab01 {

void vector_add_cpu(const float* a, const float* b, float* c, int64_t n) {
  // TODO(lab01) step 7: the same vector addition as your kernel, on the CPU. The benchmark
  // compares the two on the same data. About 1 line.
  (void)a, (void)b, (void)c, (void)n;
  // END TODO(lab01)
}

}  // namespace lab01
