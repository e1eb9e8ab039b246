// Lab 01, TODO 7: the same vector operation on the CPU, for the CPU vs GPU comparison.
#include "gpu_basics.h"

namespace lab01 {

void vector_add_cpu(const float* a, const float* b, float* c, int64_t n) {
  // SOLUTION(lab01) step 7
  for (int64_t i = 0; i < n; ++i) c[i] = a[i] + b[i];
  // END SOLUTION(lab01)
}

}  // namespace lab01
