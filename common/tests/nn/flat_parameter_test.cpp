// FlatParameter: the padded, sharded flat parameter of FSDP / ZeRO. Its shards must tile the
// model exactly for every world size, the padding must never reach the optimizer, releasing the
// full buffers must return exactly their bytes to the allocator, and the layers must compute the
// same after a release / re-gather cycle without being re-pointed.
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "gpt_test_util.h"
#include "gtl/distributed/in_process.h"
#include "gtl/memory/caching_allocator.h"
#include "gtl/nn/cross_entropy.h"
#include "gtl/nn/flat_parameter.h"
#include "gtl/nn/gpt.h"
#include "gtl/nn/linear.h"
#include "gtl/nn/models.h"
#include "gtl/nn/precision.h"
#include "gtl/optim/adamw.h"
#include "gtl_test.h"

using namespace gtl;

namespace {

std::unique_ptr<nn::Sequential> small_mlp() {
  nn::ModelConfig c;
  c.input = {1, 4, 4};
  c.hidden = 8;
  c.blocks = 1;
  c.classes = 3;
  c.seed = 7;
  return nn::make_model(c);
}

Tensor batch(uint64_t seed) {
  Generator gen(seed);
  return Tensor::normal({5, 1, 4, 4}, gen);
}

// Bit patterns, so that -0.0 != 0.0 and NaN == NaN only when the bits agree.
std::vector<uint32_t> bits(const Tensor& t) {
  const Tensor c = t.is_cuda() ? t.to(Device::cpu()) : t.clone();
  std::vector<uint32_t> out(static_cast<std::size_t>(c.numel()));
  std::memcpy(out.data(), c.data_ptr(), c.nbytes());
  return out;
}

void expect_error_containing(const std::function<void()>& fn, const std::string& expected,
                             const std::string& what) {
  try {
    fn();
    ADD_FAILURE() << what << ": expected an Error containing \"" << expected << "\", none thrown";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos)
        << what << ": the message should contain \"" << expected << "\", got: " << e.what();
  }
}

}  // namespace

// The arithmetic every rank must agree on, checked element by element against its definition:
// the padded size is the smallest multiple of N holding every element, the shards tile it, and
// owner(i) names the shard holding i.
TEST(FlatParameter, ShardLayoutTilesThePaddedBufferForAnyWorldSize) {
  for (int64_t n : {1, 2, 7, 18, 100, 1021}) {
    for (int world : {1, 2, 3, 4, 5, 6, 7, 8, 20}) {
      const nn::ShardLayout l(n, world);
      const std::string what = std::to_string(n) + " elements, " + std::to_string(world) + " ranks";
      EXPECT_EQ(l.padded_numel() % world, 0) << what << ": N must divide the padded size";
      EXPECT_GE(l.padded_numel(), n) << what;
      EXPECT_LT(l.padding(), world) << what << ": padding beyond the next multiple of N";
      std::vector<int64_t> real(static_cast<std::size_t>(world), 0);
      for (int64_t i = 0; i < l.padded_numel(); ++i) {
        const int r = l.owner(i);
        ASSERT_TRUE(l.shard_offset(r) <= i && i < l.shard_offset(r) + l.shard_size())
            << what << ": owner(" << i << ") = " << r << " whose shard does not hold it";
        if (i < n) ++real[static_cast<std::size_t>(r)];
      }
      for (int r = 0; r < world; ++r) {
        EXPECT_EQ(l.real_numel(r), real[static_cast<std::size_t>(r)])
            << what << ": real elements of rank " << r << "'s shard";
      }
    }
  }
  // The header's picture: 7 elements on 3 ranks.
  const nn::ShardLayout l(7, 3);
  EXPECT_EQ(l.padded_numel(), 9);
  EXPECT_EQ(l.real_numel(2), 1) << "the last rank holds 1 real element and 2 of padding";
  EXPECT_EQ(nn::ShardLayout(3, 5).real_numel(4), 0) << "N > numel: the last ranks own only padding";
}

// Scatter by construction (one model replica per rank), gather by hand (copy every rank's shard
// into its chunk of rank 0's full buffer after a release): the parameters come back bit for bit.
TEST(FlatParameter, PaddedShardsRoundTripExactly) {
  const auto reference = small_mlp();
  const std::vector<nn::ParamRef> original = reference->parameters();
  for (int world : {1, 2, 3, 5, 6, 7}) {
    std::vector<std::unique_ptr<nn::Sequential>> replicas;
    std::vector<std::unique_ptr<nn::FlatParameter>> flats;
    for (int r = 0; r < world; ++r) {
      replicas.push_back(small_mlp());
      flats.push_back(
          std::make_unique<nn::FlatParameter>(*replicas.back(), Device::cpu(), world, r));
    }
    nn::FlatParameter& flat = *flats[0];
    const int64_t s = flat.shard_size();
    ASSERT_EQ(flat.padded_numel() % world, 0);
    for (int r = 0; r < world; ++r) {
      EXPECT_EQ(bits(flats[static_cast<std::size_t>(r)]->shard_values()),
                bits(flat.full_values_chunk(r)))
          << world << " ranks: rank " << r << "'s shard is not chunk " << r
          << " of the flat values";
    }
    const std::vector<uint32_t> full = bits(flat.values());
    for (int64_t i = flat.numel(); i < flat.padded_numel(); ++i) {
      EXPECT_EQ(full[static_cast<std::size_t>(i)], 0u) << world << " ranks: padding element " << i;
    }

    flat.release_values();
    flat.materialize_values();
    Tensor(flat.values()).fill_(std::numeric_limits<float>::quiet_NaN());  // stale bytes
    for (int r = 0; r < world; ++r) {
      flat.full_values_chunk(r).copy_(flats[static_cast<std::size_t>(r)]->shard_values());
    }
    const std::vector<nn::ParamRef> gathered = replicas[0]->parameters();
    ASSERT_EQ(gathered.size(), original.size());
    for (std::size_t i = 0; i < original.size(); ++i) {
      EXPECT_EQ(bits(gathered[i].value), bits(original[i].value))
          << world << " ranks (shard " << s << " elements): " << original[i].name
          << " differs after scatter and re-gather";
    }
  }
}

// The optimizer sees only real elements: shard_param() covers the real part of this rank's
// shard and nothing when the shard is all padding (N > numel included); the shards' real parts
// add up to the model.
TEST(FlatParameter, ShardParamLeavesThePaddingOut) {
  Generator gen(3);
  for (int world : {1, 3, 5, 7, 19, 25}) {  // Linear(5, 3): 18 elements
    int64_t covered = 0;
    for (int r = 0; r < world; ++r) {
      nn::Linear layer(5, 3, gen);
      nn::FlatParameter flat(layer, Device::cpu(), world, r);
      ASSERT_EQ(flat.numel(), 18);
      const auto p = flat.shard_param();
      const int64_t real = flat.layout().real_numel(r);
      ASSERT_EQ(p.has_value(), real > 0)
          << world << " ranks, rank " << r << ": " << real << " real elements in its shard";
      if (!p) continue;
      EXPECT_EQ(p->value.numel(), real) << "shard_param must stop at the last real element";
      EXPECT_EQ(p->value.storage(), flat.shard_values().storage())
          << "shard_param's value must be a view of the persistent shard";
      EXPECT_EQ(p->grad.storage(), flat.shard_grads().storage())
          << "shard_param's gradient must be a view of the gradient shard";
      EXPECT_EQ(p->name, "flat");
      covered += real;
    }
    EXPECT_EQ(covered, 18) << world << " ranks: the shards' real parts must tile the parameters";
  }
  // ZeRO-1 keeps no gradient shard: the gradient is this rank's chunk of the full gradient.
  nn::Linear layer(5, 3, gen);
  nn::FlatParameter flat(layer, Device::cpu(), 4, 1, nn::FlatParameter::Options{false});
  EXPECT_FALSE(flat.shard_grads().defined());
  ASSERT_TRUE(flat.shard_param().has_value());
  EXPECT_EQ(flat.shard_param()->grad.storage(), flat.grads().storage());
}

// The memory lab's numbers: releasing the full values and gradients gives back exactly their
// bytes, materialising takes them again, and the model computes the same after a re-fill.
TEST(FlatParameter, ReleaseAndRegatherReturnExactBytesAndKeepLayersPointing) {
  auto allocator = make_cpu_allocator();
  AllocatorScope scope(allocator);
  auto model = small_mlp();
  auto replica = small_mlp();  // the other ranks' shards come from a replica, as in a gather
  const int world = 4;         // the model's 747 elements pad to 748
  nn::FlatParameter flat(*model, Device::cpu(), world, 0);
  nn::FlatParameter other(*replica, Device::cpu(), world, 1);
  ASSERT_GT(flat.padded_numel(), flat.numel()) << "this test wants some padding";
  const Tensor x = batch(1);
  nn::Context ctx;
  const std::vector<uint32_t> y_before = bits(model->forward(x, ctx));
  ctx.clear();
  const auto full_bytes = static_cast<int64_t>(flat.padded_numel()) * 4;
  const Tensor shard_copy = flat.shard_values().clone();
  auto allocated = [&] { return allocator->stats().allocated_bytes; };

  int64_t before = allocated();
  flat.release_values();
  EXPECT_EQ(before - allocated(), full_bytes)
      << "release_values() must return the whole padded buffer to the allocator";
  before = allocated();
  flat.release_grads();
  EXPECT_EQ(before - allocated(), full_bytes)
      << "release_grads() (set_to_none) must return the gradient buffer too";
  EXPECT_FALSE(flat.has_values());
  EXPECT_FALSE(flat.has_grads());
  EXPECT_NE(flat.memory_report().find("full values " + format_bytes(full_bytes) + " (released)"),
            std::string::npos)
      << flat.memory_report();
  EXPECT_EQ(bits(flat.shard_values()), bits(shard_copy)) << "the shard must survive a release";
  expect_error_containing([&] { flat.shard_from_full(); }, "released",
                          "shard_from_full without full values");

  before = allocated();
  flat.materialize_values();
  flat.materialize_values();  // already there: no second allocation
  EXPECT_EQ(allocated() - before, full_bytes)
      << "materialize_values() must take exactly the buffer's bytes, once";
  Tensor(flat.values()).fill_(std::numeric_limits<float>::quiet_NaN());  // stale bytes
  for (int r = 0; r < world; ++r) {
    flat.full_values_chunk(r).copy_(r == 0 ? flat.shard_values() : other.full_values_chunk(r));
  }
  EXPECT_EQ(bits(model->forward(x, ctx)), y_before)
      << "after a release and re-gather the layers must compute the same output, through the "
         "same views";
  before = allocated();
  flat.materialize_grads();
  EXPECT_EQ(allocated() - before, full_bytes)
      << "materialize_grads() must take exactly the gradient buffer's bytes";
}

TEST(FlatParameter, CachingAllocatorSeesExactlyTheRequestedBytesFreed) {
  auto allocator = std::dynamic_pointer_cast<CachingAllocator>(make_cpu_caching_allocator());
  ASSERT_NE(allocator, nullptr);
  AllocatorScope scope(allocator);
  auto model = small_mlp();
  nn::FlatParameter flat(*model, Device::cpu(), 7, 3);
  const auto rounded = static_cast<int64_t>(allocator->block_size(flat.values().data_ptr()));
  const MemoryStats s0 = allocator->stats();
  const int64_t cached0 = allocator->cache_info().cached_bytes;
  flat.release_values();
  EXPECT_EQ(s0.allocated_bytes - allocator->stats().allocated_bytes,
            static_cast<int64_t>(flat.values().nbytes()))
      << "allocated counts requested bytes: it must drop by the padded buffer's size";
  EXPECT_EQ(allocator->stats().reserved_bytes, s0.reserved_bytes)
      << "reserved stays: the block goes to the cache";
  EXPECT_EQ(allocator->cache_info().cached_bytes - cached0, rounded)
      << "the cache must gain the buffer's block, rounded to " << CachingAllocator::kRoundBytes;
  flat.materialize_values();
  EXPECT_EQ(allocator->stats().allocated_bytes, s0.allocated_bytes);
  EXPECT_EQ(allocator->stats().num_system_allocs, s0.num_system_allocs)
      << "re-materialising must reuse the cached block";
}

// FSDP units: the residual block is one unit, the root unit holds every other parameter. A
// released unit's forward must fail with the reason, and work again once re-gathered.
TEST(FlatParameter, ReleasedUnitsForwardFailsClearly) {
  auto model = small_mlp();
  nn::FlatParameter block((*model)[2], Device::cpu(), 1, 0);
  std::vector<nn::ParamRef*> rest;
  for (nn::ParamRef* p : model->parameter_slots()) {
    if (p->value.storage() != block.values().storage()) rest.push_back(p);
  }
  nn::FlatParameter root(rest, "flat", Device::cpu(), 1, 0, nn::FlatParameter::Options{});
  EXPECT_EQ(block.name(), "2.flat");
  EXPECT_EQ(block.numel() + root.numel(), model->num_parameters())
      << "the two units must hold every parameter once";
  const Tensor x = batch(2);
  nn::Context ctx;
  const std::vector<uint32_t> y_before = bits(model->forward(x, ctx));
  block.release_values();
  expect_error_containing([&] { model->forward(x, ctx); }, "released (FSDP freed it)",
                          "forward through a unit whose values are released");
  block.materialize_values();
  block.full_values_chunk(0).copy_(block.shard_values());
  EXPECT_EQ(bits(model->forward(x, ctx)), y_before) << "the re-gathered unit must compute the same";
}

// set_to_none frees the gradients; backward writes into materialised (zero) gradients, with
// Accumulate as with Overwrite, exactly what the same model computes without a flat parameter.
TEST(FlatParameter, BackwardWritesIntoMaterialisedGradients) {
  auto allocator = make_cpu_allocator();
  AllocatorScope scope(allocator);
  auto model = small_mlp();
  auto reference = small_mlp();
  nn::FlatParameter flat(*model, Device::cpu(), 5, 2);
  const Tensor x = batch(3);
  Generator gen(4);
  nn::Context ctx, ref_ctx;
  const Tensor y = reference->forward(x, ref_ctx);
  const Tensor dy = Tensor::normal(y.shape(), gen);
  reference->backward(ref_ctx, dy, nn::GradMode::Overwrite);

  flat.release_grads();
  expect_error_containing([&] { model->parameters()[0].grad.to_vector(); }, "released",
                          "reading a gradient after set_to_none");
  for (nn::GradMode mode : {nn::GradMode::Accumulate, nn::GradMode::Overwrite}) {
    flat.materialize_grads();
    for (float v : flat.grads().to_vector()) ASSERT_EQ(v, 0.f) << "gradients materialise as zero";
    model->forward(x, ctx);
    model->backward(ctx, dy, mode);
    const auto params = model->parameters(), expected = reference->parameters();
    for (std::size_t i = 0; i < params.size(); ++i) {
      const std::string err =
          gtl::testing::compare(params[i].grad.to_vector(), expected[i].grad.to_vector(), {0, 0});
      EXPECT_TRUE(err.empty()) << params[i].name << " (mode "
                               << (mode == nn::GradMode::Accumulate ? "Accumulate" : "Overwrite")
                               << "): gradient in the flat buffer differs: " << err;
    }
    for (int64_t i = flat.numel(); i < flat.padded_numel(); ++i) {
      ASSERT_EQ(flat.grads().to_vector()[static_cast<std::size_t>(i)], 0.f)
          << "backward wrote into the padding";
    }
    const int64_t before = allocator->stats().allocated_bytes;
    flat.release_grads();
    EXPECT_EQ(before - allocator->stats().allocated_bytes,
              static_cast<int64_t>(flat.grads().nbytes()))
        << "set_to_none must free the whole gradient buffer";
  }
}

// One ZeRO-3 step on 3 in-process ranks, with the collectives the FSDP lab uses: all-gather the
// shards before forward and before backward, reduce-scatter the gradients into the shards, AdamW
// on shard_param() only. Every rank sees the same batch, so the summed gradient is exactly 3 g
// and the step must match AdamW on the unsharded model bit for bit, padding left at zero.
TEST(FlatParameter, ZeroThreeStepOverCollectivesMatchesTheUnshardedStep) {
  const int world = 3;
  const Tensor x = batch(5);
  Generator gen(6);
  const optim::AdamWOptions adamw{1e-2f, 0.9f, 0.999f, 1e-8f, 0.1f};

  auto reference = small_mlp();
  nn::FlatParameter ref_flat(*reference, Device::cpu(), 1, 0);
  nn::Context ref_ctx;
  const Tensor y = reference->forward(x, ref_ctx);
  const Tensor dy = Tensor::normal(y.shape(), gen);
  reference->backward(ref_ctx, dy);
  std::vector<float> g = ref_flat.grads().to_vector();
  for (float& v : g) v = 3.f * v;  // the sum over 3 identical ranks: 2g is exact, 3g rounds once
  Tensor(ref_flat.shard_grads()).copy_(Tensor::from_vector(g, {ref_flat.shard_size()}));
  optim::AdamW ref_opt({*ref_flat.shard_param()}, adamw);
  ref_opt.step();
  const std::vector<uint32_t> expected = bits(ref_flat.shard_values());

  dist::run_ranks(world, [&](dist::Communicator& comm) {
    auto model = small_mlp();
    nn::FlatParameter flat(*model, Device::cpu(), world, comm.rank());
    flat.release_values();
    flat.release_grads();
    auto gather = [&] {
      flat.materialize_values();
      comm.all_gather(flat.shard_values(), flat.values());
    };
    nn::Context ctx;
    gather();
    model->forward(x, ctx);
    flat.release_values();
    gather();
    flat.materialize_grads();
    model->backward(ctx, dy);
    flat.release_values();
    comm.reduce_scatter(flat.grads(), flat.shard_grads(), dist::ReduceOp::Sum);
    flat.release_grads();
    if (auto p = flat.shard_param()) {
      optim::AdamW opt({*p}, adamw);
      opt.step();
    }
    gather();
    std::vector<uint32_t> want = expected;
    want.resize(static_cast<std::size_t>(flat.padded_numel()), 0u);  // the padding stays zero
    EXPECT_EQ(bits(flat.values()), want)
        << "rank " << comm.rank() << ": the ZeRO-3 step differs from the unsharded AdamW step";
  });
}

// ---- mixed precision: the half full values, the float32 master shard -----------------------

// Under a bf16 compute dtype the float32 values live on only as each rank's shard (the master,
// bit for bit the values it was built from), the full values are their rounding, every parameter
// of the unit is a bf16 view, and the allocator holds exactly 2 bytes a padded element for the
// values, 4 for the gradients and 4 a shard element: no float32 copy of the model is left.
TEST(FlatParameter, HalfComputeKeepsOnlyTheShardInFloat32) {
  const int world = 3, rank = 1;
  auto reference = small_mlp();
  nn::FlatParameter ref_flat(*reference, Device::cpu(), 1, 0);  // float32, the original values
  const Tensor original = ref_flat.values();
  auto allocator = std::dynamic_pointer_cast<CachingAllocator>(make_cpu_caching_allocator());
  AllocatorScope scope(allocator);
  auto model = small_mlp();
  const int64_t before = allocator->stats().allocated_bytes;
  nn::FlatParameter::Options options;
  options.shard_grads = false;  // ZeRO-1
  options.compute = DType::BFloat16;
  nn::FlatParameter flat(*model, Device::cpu(), world, rank, options);
  ASSERT_EQ(flat.compute(), DType::BFloat16);
  ASSERT_EQ(flat.values().dtype(), DType::BFloat16);
  ASSERT_EQ(flat.grads().dtype(), DType::Float32) << "the gradients stay float32";
  const int64_t start = flat.layout().shard_offset(rank), size = flat.shard_size();
  EXPECT_EQ(bits(flat.shard_values()), bits(original.slice(start, start + size)))
      << "the shard must be the float32 master: the values it was built from, not their rounding";
  EXPECT_EQ(bits(flat.values().slice(0, flat.numel()).to(DType::Float32)),
            bits(original.slice(0, flat.numel()).to(DType::BFloat16).to(DType::Float32)))
      << "the full values must be the bf16 rounding of the float32 values";
  for (const nn::ParamRef& p : model->parameters()) {
    EXPECT_EQ(p.value.dtype(), DType::BFloat16) << p.name << ": the layers read the half copy";
    EXPECT_FALSE(p.compute.defined()) << p.name << ": the value IS the compute copy";
  }
  // The model's own float32 values and gradients (8 bytes a parameter, allocated before) are
  // freed as the views replace them; the float32 buffer the unit was built through is freed too.
  EXPECT_EQ(allocator->stats().allocated_bytes - before,
            (2 + 4) * flat.padded_numel() + 4 * size - 8 * flat.numel())
      << "a bf16 unit holds 2 bytes a padded element (values), 4 (gradients) and 4 a shard "
         "element (the master), and nothing else";
}

// ZeRO-1 under bf16 over 3 ranks: AdamW updates each rank's float32 master, gather_input rounds
// it into the rank's own chunk of the bf16 values (the same memory, no buffer of its own), and an
// all-gather in place leaves every rank with the rounding of all the updated masters.
TEST(FlatParameter, HalfGatherRoundsTheMastersInPlace) {
  const int world = 3;
  const optim::AdamWOptions adamw{1e-2f, 0.9f, 0.999f, 1e-8f, 0.1f};
  auto reference = small_mlp();
  nn::FlatParameter ref_flat(*reference, Device::cpu(), 1, 0);
  Generator gen(9);
  const Tensor g = Tensor::normal({ref_flat.padded_numel()}, gen);
  Tensor(ref_flat.shard_grads()).copy_(g);
  optim::AdamW ref_opt({*ref_flat.shard_param()}, adamw);
  ref_opt.step();
  const std::vector<uint32_t> expected_masters = bits(ref_flat.shard_values());
  const std::vector<uint32_t> expected_values =
      bits(ref_flat.shard_values().to(DType::BFloat16).to(DType::Float32));

  dist::run_ranks(world, [&](dist::Communicator& comm) {
    auto model = small_mlp();
    nn::FlatParameter::Options options;
    options.shard_grads = false;
    options.compute = DType::BFloat16;
    nn::FlatParameter flat(*model, Device::cpu(), world, comm.rank(), options);
    const int64_t start = flat.layout().shard_offset(comm.rank()), size = flat.shard_size();
    const int64_t real = flat.layout().real_numel(comm.rank());
    Tensor(flat.grads()).copy_(g.slice(0, flat.padded_numel()));
    if (auto p = flat.shard_param()) {
      optim::AdamW opt({*p}, adamw);
      opt.step();
    }
    std::vector<uint32_t> master(expected_masters.begin() + start,
                                 expected_masters.begin() + start + real);
    std::vector<uint32_t> got = bits(flat.shard_values());
    got.resize(static_cast<std::size_t>(real));
    EXPECT_EQ(got, master) << "rank " << comm.rank() << ": the float32 master's update differs";
    const Tensor in = flat.gather_input();
    EXPECT_EQ(in.data_ptr(), flat.full_values_chunk(comm.rank()).data_ptr())
        << "gather_input must round into the rank's own chunk of the full values";
    EXPECT_EQ(in.numel(), size);
    comm.all_gather(in, flat.values());
    std::vector<uint32_t> want(expected_values.begin(), expected_values.begin() + flat.numel());
    std::vector<uint32_t> values = bits(flat.values().to(DType::Float32));
    values.resize(static_cast<std::size_t>(flat.numel()));
    EXPECT_EQ(values, want)
        << "rank " << comm.rank()
        << ": the gathered bf16 values must be the rounded masters of all ranks";
  });
}

// The layers read every parameter of a bf16 unit in bf16 (LayerNorms, biases, embeddings and the
// tied head included), widening to float32 where they compute in float32: a GPT whose parameters
// all sit in a bf16 FlatParameter computes under the bf16 policy, bit for bit, what the same GPT
// computes with float32 values equal to those roundings (and bf16 compute copies of them).
TEST(FlatParameter, HalfUnitGptMatchesTheGptOfRoundedFloat32Values) {
  nn::GPTConfig c;
  c.vocab = 29;
  c.context = 8;
  c.dim = 16;
  c.layers = 2;
  c.heads = 2;
  c.seed = 4;
  const std::vector<int64_t> ids = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3};
  std::vector<int64_t> next(ids.begin() + 1, ids.end());
  next.push_back(0);
  const Tensor in = gtl::testing::ids_tensor(ids, {2, 8});
  const Tensor targets = gtl::testing::ids_tensor(next, {16});
  const nn::PrecisionScope precision(nn::PrecisionPolicy::bf16());
  auto run = [&](nn::GPT& gpt) {
    const nn::CrossEntropyLoss head;
    nn::Context ctx, loss_ctx;
    const Tensor loss = head.forward(gpt.forward(in, ctx), targets, loss_ctx);
    gpt.backward(ctx, head.backward(loss_ctx));
    return loss.item();
  };

  nn::GPT rounded(c);
  for (nn::ParamRef* p : rounded.parameter_slots())
    Tensor(p->value).copy_(p->value.to(DType::BFloat16).to(DType::Float32));
  nn::add_compute_copies(rounded.parameter_slots(), DType::BFloat16);
  const float want = run(rounded);

  nn::GPT half(c);
  nn::FlatParameter::Options options;
  options.compute = DType::BFloat16;
  nn::FlatParameter flat(half, Device::cpu(), 1, 0, options);
  const float got = run(half);
  EXPECT_EQ(got, want) << "the loss of the bf16 unit's GPT";
  const std::vector<nn::ParamRef> a = rounded.parameters(), b = half.parameters();
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    EXPECT_EQ(bits(b[i].grad), bits(a[i].grad)) << b[i].name << ": its float32 gradient";
}
