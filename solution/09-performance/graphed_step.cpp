// Lab 09, TODO 4: one training step captured as a CUDA graph (gtl/runtime/cuda_graph.h) and
// replayed: the step's dozens of kernel launches become one graph launch.
//
// A graph replays the work it recorded on the addresses it recorded: whatever a replay must see
// lives in buffers made before the capture and refilled in place, and whatever the host passed as
// a value at capture time stays that value.
#include <memory>

#include "gtl/runtime/cuda_graph.h"
#include "gtl/runtime/error.h"
#include "gtl/runtime/stream.h"
#include "performance.h"

namespace lab09 {

struct GraphedStep::State {
  // SOLUTION(lab09) step 4
  Trainee* trainee = nullptr;
  gtl::Tensor x, labels;  // the graph's inputs: refilled in place before every replay
  gtl::Tensor loss;       // the graph's output: rewritten by every replay
  std::unique_ptr<gtl::CudaGraph> graph;
  // END SOLUTION(lab09)
};

GraphedStep::GraphedStep(Trainee& trainee) : state_(std::make_unique<State>()) {
  // SOLUTION(lab09) step 4
  State& s = *state_;
  s.trainee = &trainee;
  s.x = gtl::Tensor::empty(trainee.x(0).shape(), gtl::DType::Float32, trainee.device());
  s.labels = gtl::Tensor::empty(trainee.labels(0).shape(), gtl::DType::Int64, trainee.device());
  // END SOLUTION(lab09)
}

GraphedStep::~GraphedStep() = default;

gtl::Tensor GraphedStep::operator()(const gtl::Tensor& x, const gtl::Tensor& labels) {
  // SOLUTION(lab09) step 4
  State& s = *state_;
  const gtl::Stream stream = gtl::current_stream();
  s.x.copy_async_(x, stream);
  s.labels.copy_async_(labels, stream);
  if (s.graph == nullptr) {
    const gtl::Tensor warm_up = s.trainee->step(s.x, s.labels);
    s.graph = std::make_unique<gtl::CudaGraph>(s.trainee->device());
    s.graph->capture([&] { s.loss = s.trainee->step(s.x, s.labels); });
    return warm_up;
  }
  s.graph->replay();
  return s.loss;
  // END SOLUTION(lab09)
}

}  // namespace lab09
