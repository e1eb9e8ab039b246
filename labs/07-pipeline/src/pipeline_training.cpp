// Lab 07's harness: see pipeline_training.h.
#include "pipeline_training.h"

#include <cmath>
#include <limits>
#include <memory>

#include "gtl/data/synthetic_digits.h"
#include "gtl/distributed/module_trace.h"
#include "gtl/io/result_file.h"
#include "gtl/memory/allocator.h"
#include "gtl/nn/cross_entropy.h"
#include "gtl/nn/parameter_buffer.h"
#include "gtl/runtime/error.h"
#include "gtl_reference_guard.h"
#include "lab07_student_call.h"

namespace lab07 {

namespace nn = gtl::nn;
namespace dist = gtl::dist;
using gtl::Device;

nn::ModelConfig lab_model() {
  nn::ModelConfig c;
  c.hidden = 32;
  c.blocks = 2;
  c.seed = 5;
  return c;
}

Batch lab_batch(int64_t rows, uint64_t seed) {
  gtl::data::SyntheticDigits digits(rows, gtl::data::Split::Train, seed);
  std::vector<int64_t> indices(static_cast<std::size_t>(rows));
  for (int64_t i = 0; i < rows; ++i) indices[static_cast<std::size_t>(i)] = i;
  Batch b;
  b.images = Tensor::empty({rows, 1, 28, 28});
  b.labels = Tensor::empty({rows}, gtl::DType::Int64);
  digits.gather(indices, b.images.data<float>(), b.labels.data<int64_t>());
  return b;
}

Shape boundary_sample_shape(const nn::ModelConfig& config, int64_t boundary) {
  GTL_CHECK(config.kind == "mlp", "lab07: the pipeline harness supports the mlp only");
  const int64_t layers = nn::num_layers(config);
  GTL_CHECK(boundary >= 0 && boundary <= layers,
            "lab07: boundary " << boundary << " outside [0, " << layers << "]");
  if (boundary == 0) return config.input;
  if (boundary == 1) return {gtl::shape_numel(config.input)};
  if (boundary == layers) return {config.classes};
  return {config.hidden};
}

std::vector<double> layer_parameter_counts(const nn::ModelConfig& config) {
  std::vector<double> counts;
  for (int64_t l = 0; l < nn::num_layers(config); ++l) {
    counts.push_back(static_cast<double>(nn::make_stage(config, l, l + 1)->num_parameters()));
  }
  return counts;
}

std::vector<MicroBatch> harness_micro_batches(int64_t batch, int64_t m) {
  std::vector<MicroBatch> out;
  for (int64_t i = 0; i < m; ++i) out.push_back({i * batch / m, (i + 1) * batch / m});
  return out;
}

std::vector<float> harness_loss_weights(const std::vector<MicroBatch>& micro_batches,
                                        int64_t batch) {
  gtl::grading::reference_guard("lab07::harness_loss_weights");
  std::vector<float> w;
  for (const MicroBatch& mb : micro_batches) {
    w.push_back(static_cast<float>(mb.size()) / static_cast<float>(batch));
  }
  return w;
}

namespace {

std::map<std::string, std::vector<float>> grads_by_name(const nn::Module& model) {
  std::map<std::string, std::vector<float>> out;
  for (const nn::ParamRef& p : model.parameters()) {
    out[p.name] = p.grad.to(Device::cpu()).to_vector();
  }
  return out;
}

}  // namespace

StageStep harness_stage_step(const PipelineConfig& config, int s, const StageSchedule& actions,
                             nn::Sequential& layers) {
  const int p = static_cast<int>(config.boundaries.size()) - 1;
  const int64_t begin = config.boundaries[static_cast<std::size_t>(s)];
  const int64_t end = config.boundaries[static_cast<std::size_t>(s) + 1];
  const Batch batch = lab_batch(config.batch, config.data_seed);
  StageStep step;
  step.layers = &layers;
  step.actions = actions;
  step.micro_batches = harness_micro_batches(config.batch, config.micro_batches);
  step.loss_weights = harness_loss_weights(step.micro_batches, config.batch);
  step.device = config.device;
  if (s == 0) step.images = batch.images.to(config.device);
  if (s == p - 1) step.labels = batch.labels.to(config.device);
  if (s > 0) step.input_sample = boundary_sample_shape(config.model, begin);
  if (s < p - 1) step.output_sample = boundary_sample_shape(config.model, end);
  return step;
}

StageResult pipeline_step(Communicator& comm, const PipelineConfig& config,
                          const StageSchedule& actions) {
  gtl::grading::reference_guard("lab07::pipeline_step");
  const int s = comm.rank(), p = comm.world_size();
  GTL_CHECK(static_cast<int>(config.boundaries.size()) == p + 1,
            "lab07: " << config.boundaries.size() - 1 << " stages on " << p << " ranks");
  const int64_t begin = config.boundaries[static_cast<std::size_t>(s)];
  const int64_t end = config.boundaries[static_cast<std::size_t>(s) + 1];
  std::unique_ptr<nn::Sequential> layers = nn::make_stage(config.model, begin, end);
  nn::ParameterBuffer buffer(*layers, config.device);
  const StageStep step = harness_stage_step(config, s, actions, *layers);
  StageResult result;
  // Your executor runs inside TODO 5's guard scope (lab07_student_call.h): the references the
  // rubric forbids it refuse to run until it returns. The scope is process-wide and pipeline_step
  // is one of them, so a barrier first: every rank is past its own start before any rank's scope
  // begins (a barrier moves no bytes, and the peak is measured after it).
  comm.barrier();
  const std::shared_ptr<gtl::Allocator> allocator = gtl::current_allocator(config.device);
  allocator->reset_peak_stats();
  const int64_t before = allocator->stats().allocated_bytes;
  {
    const gtl::EventLogScope log(*allocator, &result.step_events);
    const auto call = lab07_student_call::todo5();
    result.loss = run_stage(comm, step);
  }
  result.step_peak_bytes = allocator->stats().peak_allocated_bytes - before;
  result.grads = grads_by_name(*layers);
  return result;
}

StageResult sequential_step(const PipelineConfig& config) {
  gtl::grading::reference_guard("lab07::sequential_step");
  GTL_CHECK(config.device.is_cpu(), "lab07: the sequential reference runs on the CPU");
  std::unique_ptr<nn::Sequential> model = nn::make_model(config.model);
  nn::ParameterBuffer buffer(*model, Device::cpu());
  const Batch batch = lab_batch(config.batch, config.data_seed);
  const std::vector<MicroBatch> mbs = harness_micro_batches(config.batch, config.micro_batches);
  const std::vector<float> weights = harness_loss_weights(mbs, config.batch);
  const nn::CrossEntropyLoss head;
  StageResult result;
  for (std::size_t i = 0; i < mbs.size(); ++i) {
    nn::Context ctx, loss_ctx;
    Tensor logits = model->forward(batch.images.slice(mbs[i].begin, mbs[i].end), ctx);
    Tensor loss = head.forward(logits, batch.labels.slice(mbs[i].begin, mbs[i].end), loss_ctx);
    result.loss += weights[i] * loss.item();
    model->backward(ctx, head.backward(loss_ctx, weights[i]),
                    i == 0 ? nn::GradMode::Overwrite : nn::GradMode::Accumulate);
  }
  result.grads = grads_by_name(*model);
  return result;
}

nn::ModelConfig reference_model() {
  nn::ModelConfig c;
  c.input = {1, 1, 4118};  // Flatten -> 4118: Linear(4118, 512) costs what a block costs
  c.hidden = 512;
  c.blocks = 3;
  c.seed = 5;
  return c;
}

std::vector<int64_t> reference_boundaries() {
  return {0, 2, 3, 4, 7};
}

dist::CostModel reference_cluster() {
  // Only GEMMs take time: the memory-bound ops (LayerNorm, GELU, additions) and the messages
  // are free, so the stages cost the same and the bubble is the schedule's alone.
  dist::CostModel m;
  m.peak_flops = 1e12;
  m.mem_bandwidth = std::numeric_limits<double>::infinity();
  m.intra_node = dist::Link{0.0, std::numeric_limits<double>::infinity()};
  m.inter_node = m.intra_node;
  return m;
}

std::vector<dist::TraceEvent> traced_reference_step(Communicator& comm,
                                                    const StageSchedule& actions, int64_t m) {
  const nn::ModelConfig config = reference_model();
  const std::vector<int64_t> b = reference_boundaries();
  const int s = comm.rank(), p = comm.world_size();
  GTL_CHECK(static_cast<int>(b.size()) == p + 1,
            "lab07: the reference pipeline has " << b.size() - 1 << " stages, not " << p);
  std::unique_ptr<nn::Sequential> layers =
      nn::make_stage(config, b[static_cast<std::size_t>(s)], b[static_cast<std::size_t>(s) + 1]);
  nn::ParameterBuffer buffer(*layers, Device::cpu());
  const int64_t rows = m * kReferenceRowsPerMicroBatch;
  StageStep step;
  step.layers = layers.get();
  step.actions = actions;
  step.micro_batches = harness_micro_batches(rows, m);
  step.loss_weights = harness_loss_weights(step.micro_batches, rows);
  if (s == 0) step.images = Tensor::full({rows, 1, 1, 4118}, 0.01);
  if (s == p - 1) step.labels = Tensor::zeros({rows}, gtl::DType::Int64);
  if (s > 0) step.input_sample = boundary_sample_shape(config, b[static_cast<std::size_t>(s)]);
  if (s < p - 1) {
    step.output_sample = boundary_sample_shape(config, b[static_cast<std::size_t>(s) + 1]);
  }
  comm.trace()->clear();
  nn::HookHandle traced = dist::trace_modules(*layers, comm.trace());
  {
    // TODO 5's scope (lab07_student_call.h). No barrier: nothing before it here is a reference
    // the scope forbids, and the trace holds the step alone.
    const auto call = lab07_student_call::todo5();
    run_stage(comm, step);
  }
  return comm.trace()->events();
}

// The result file: io::ResultFileWriter's header, the loss, then the number of parameters and one
// line per parameter's gradient, under its name.
void write_stage_result(const std::string& path, const StageResult& result,
                        const std::string& backend, int world_size) {
  gtl::io::ResultFileWriter out(path, backend, world_size);
  out.put_floats("loss", {result.loss});
  out.put_count("params", result.grads.size());
  for (const auto& [name, g] : result.grads) out.put_floats(name, g);
  out.close();
}

StageResultFile read_stage_result(const std::string& path) {
  gtl::io::ResultFileReader in(path);
  StageResultFile f;
  f.backend = in.backend();
  f.world_size = in.world_size();
  const std::vector<float> loss = in.floats("loss");
  GTL_CHECK(loss.size() == 1, "lab07 result file " << path << ": 'loss' holds " << loss.size()
                                                   << " values, expected 1");
  f.result.loss = loss[0];
  const std::size_t params = in.count("params");
  for (std::size_t i = 0; i < params; ++i) f.result.grads.insert(in.next_floats());
  return f;
}

}  // namespace lab07
