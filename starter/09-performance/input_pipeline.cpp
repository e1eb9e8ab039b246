// Lab 09, TODO 3: an input pipeline (input_pipeline.h). W worker threads load a slow data set's
// batches ahead of the training loop, at most D in flight, and next() hands them out in order.
//
// A loader that loads on the training loop's thread makes every step pay for its batch; one
// worker that loads while the step runs hides a batch that costs less than a step; a batch that
// costs more than a step needs several workers at once, and the depth bounds how far ahead they
// may run (memory, and staging buffers on a GPU). On a CUDA device each batch is loaded into
// pinned host memory, whose copy the copy engine runs on a stream of its own while kernels run
// on the training stream; the consumer's stream waits on the copy's event, the host does not.
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "gtl/memory/allocator.h"
#include "gtl/runtime/error.h"
#include "input_pipeline.h"

namespace lab09 {

struct InputPipeline::State {
  std::shared_ptr<const SlowDataset> dataset;
  PipelineOptions options;
  // TODO(lab09) step 3: the pipeline's state, and what a worker thread does (a member function
  // here is one way). Spec (input_pipeline.h): W = options.workers threads call dataset->load for
  // batches 0, 1, 2, ... (epoch g / batches, index g % batches), never more than D = options.depth
  // batches loading or loaded and not yet returned by next(); next() returns them in the data
  // set's order although workers finish out of order, and rethrows a load's exception at the batch
  // it belongs to. On a CUDA device a worker loads into pinned staging memory
  // (gtl::pinned_allocator()), allocates the device tensor from the consumer's allocator on a copy
  // stream, copies with copy_async_ on that stream and records an Event in PipelineBatch::ready.
  // What you decide: where the bound of D is enforced, how next() finds batch g among batches that
  // finished in any order, when a staging buffer may be loaded again, and how an error and the
  // destructor reach a thread that waits. About 90 lines in all four regions.
  // END TODO(lab09)
};

InputPipeline::InputPipeline(std::shared_ptr<const SlowDataset> dataset, PipelineOptions options)
    : state_(std::make_unique<State>()) {
  GTL_CHECK(dataset != nullptr && options.workers > 0 && options.depth > 0,
            "InputPipeline: " << options.workers << " workers, depth " << options.depth);
  state_->dataset = std::move(dataset);
  state_->options = options;
  // TODO(lab09) step 3: start the workers (and on CUDA, the copy stream and the allocator the
  // batches come from: take it here, on the consumer's thread).
  throw gtl::Error("TODO(lab09) step 3: InputPipeline is not implemented");
  // END TODO(lab09)
}

InputPipeline::~InputPipeline() {
  // TODO(lab09) step 3: stop and join the workers, whatever each is doing; none may hang.
  // END TODO(lab09)
}

std::optional<PipelineBatch> InputPipeline::next() {
  // TODO(lab09) step 3: the next batch in order, std::nullopt once at the end of each epoch, or
  // the error of its load. Never a host synchronisation.
  throw gtl::Error("TODO(lab09) step 3: InputPipeline is not implemented");
  // END TODO(lab09)
}

}  // namespace lab09
