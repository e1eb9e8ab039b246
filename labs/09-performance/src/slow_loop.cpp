// The slow loop TODO 2 makes fast (performance.h). It is correct, and it waits for the GPU three
// times a step: two blocking copies of the batch into its input buffers (Tensor::copy_ returns
// when the copy is done) and a host read of the loss (item()). On a GPU each wait drains the queue
// of launched kernels: the GPU idles while the host launches the next step.
#include <cstdio>
#include <iomanip>
#include <sstream>

#include "performance.h"

namespace lab09 {

std::string log_line(int64_t last_step, const std::vector<float>& interval_losses) {
  GTL_CHECK(!interval_losses.empty(), "log_line: an interval of no steps");
  float sum = 0.f;
  for (float l : interval_losses) sum += l;
  std::ostringstream line;
  line << std::fixed << std::setprecision(6) << "step " << last_step + 1 << ": loss "
       << interval_losses.back() << " (mean of " << interval_losses.size() << ": "
       << sum / static_cast<float>(interval_losses.size()) << ")";
  return line.str();
}

LoopResult slow_loop(Trainee& trainee, const LoopConfig& config) {
  GTL_CHECK(config.steps >= 0 && config.log_every > 0,
            "slow_loop: " << config.steps << " steps, a log line every " << config.log_every);
  LoopResult result;
  gtl::Tensor x = gtl::Tensor::empty(trainee.x(0).shape(), gtl::DType::Float32, trainee.device());
  gtl::Tensor labels =
      gtl::Tensor::empty(trainee.labels(0).shape(), gtl::DType::Int64, trainee.device());
  std::vector<float> interval;
  for (int64_t i = 0; i < config.steps; ++i) {
    x.copy_(trainee.x(i));  // a blocking copy: the host waits for it
    labels.copy_(trainee.labels(i));
    const float loss = trainee.step(x, labels).item();  // the host waits for the whole step
    result.losses.push_back(loss);
    interval.push_back(loss);
    if ((i + 1) % config.log_every == 0 || i + 1 == config.steps) {
      result.log.push_back(log_line(i, interval));
      std::printf("%s\n", result.log.back().c_str());
      interval.clear();
    }
  }
  return result;
}

}  // namespace lab09
