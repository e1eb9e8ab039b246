// The slice of n things a tensor-parallel rank holds (tensor_parallel.h).
#include "gtl/runtime/error.h"
#include "tensor_parallel.h"

namespace lab08 {

Slice tp_slice(int64_t n, int rank, int size, const char* what) {
  GTL_CHECK(size >= 1 && rank >= 0 && rank < size,
            "tp_slice: rank " << rank << " of a tensor-parallel group of " << size);
  GTL_CHECK(n % size == 0, "tensor parallelism: " << n << " " << what << " cannot be split across "
                                                  << size << " ranks (choose a TP size that "
                                                  << "divides it; this lab does not pad)");
  const int64_t part = n / size;
  return {rank * part, (rank + 1) * part};
}

}  // namespace lab08
