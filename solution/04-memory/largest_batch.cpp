// Lab 04, TODO 6: the largest batch that fits under a memory limit.
#include "memory_lab.h"

namespace lab04 {

// SOLUTION(lab04) step 6: doubling, then bisection; every try cleans up after an OOM.
namespace {

bool fits(const ModelConfig& config, const std::shared_ptr<gtl::Allocator>& allocator,
          int64_t batch, BatchSearch& search) {
  const gtl::AllocatorScope scope(allocator);
  search.tries += 1;
  try {
    train_step_once(config, batch);  // everything it built is freed when it returns or throws
    return true;
  } catch (const gtl::OutOfMemoryError&) {
    search.ooms += 1;
    return false;
  }
}

}  // namespace

BatchSearch find_largest_batch(const ModelConfig& config,
                               const std::shared_ptr<gtl::Allocator>& allocator,
                               int64_t max_batch) {
  BatchSearch search;
  int64_t good = 0, bad = max_batch + 1;  // fits(good) (0 trivially), !fits(bad)
  for (int64_t b = 1; b <= max_batch; b *= 2) {
    if (!fits(config, allocator, b, search)) {
      bad = b;
      break;
    }
    good = b;
  }
  if (bad == max_batch + 1 && good < max_batch) {
    if (fits(config, allocator, max_batch, search))
      good = max_batch;
    else
      bad = max_batch;
  }
  while (bad - good > 1) {
    const int64_t mid = good + (bad - good) / 2;
    if (fits(config, allocator, mid, search))
      good = mid;
    else
      bad = mid;
  }
  search.largest = good;
  return search;
}
// END SOLUTION(lab04)

}  // namespace lab04
