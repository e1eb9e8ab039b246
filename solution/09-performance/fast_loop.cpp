// Lab 09, TODO 2: the slow loop (src/slow_loop.cpp) without its host synchronisations. Same steps,
// same losses bit for bit, same log lines, and the host waits for the GPU only where it must: when
// a log line needs the losses of its interval.
//
// Every wait drains the queue of launched work: while the host waits, it launches nothing, and
// when it resumes, the GPU waits for the host. A loop that never waits lets the host run ahead,
// launching the next steps while the GPU computes the current one.
#include <cstdio>
#include <vector>

#include "gtl/runtime/error.h"
#include "gtl/runtime/stream.h"
#include "performance.h"

namespace lab09 {

LoopResult fast_loop(Trainee& trainee, const LoopConfig& config) {
  GTL_CHECK(config.steps >= 0 && config.log_every > 0,
            "fast_loop: " << config.steps << " steps, a log line every " << config.log_every);
  LoopResult result;
  // SOLUTION(lab09) step 2
  const gtl::Stream stream = gtl::current_stream();
  gtl::Tensor pending =
      gtl::Tensor::empty({config.log_every}, gtl::DType::Float32, trainee.device());
  int64_t held = 0;
  for (int64_t i = 0; i < config.steps; ++i) {
    const gtl::Tensor loss = trainee.step(trainee.x(i), trainee.labels(i));
    pending.slice(held, held + 1).copy_async_(loss, stream);
    ++held;
    if (held == config.log_every || i + 1 == config.steps) {
      const std::vector<float> interval = pending.slice(0, held).to_vector();  // the one wait
      result.losses.insert(result.losses.end(), interval.begin(), interval.end());
      result.log.push_back(log_line(i, interval));
      std::printf("%s\n", result.log.back().c_str());
      held = 0;
    }
  }
  // END SOLUTION(lab09)
  return result;
}

}  // namespace lab09
