// TODO 8: bf16 compute copies under FSDP. On units the test builds itself (make_units of the lab
// model, full values released as Fsdp leaves them between uses), so TODO 4 need not be done:
//   - the gathered copy is the fp32 full values rounded to bf16, bit for bit;
//   - the all-gather sends exactly half the bytes of fp32 FSDP's (the communicator's counters);
//   - the fp32 shards stay as they were, and the rank's persistent bytes do not change: the bf16
//     copy is the only thing the gather adds while it lives (the rank's allocator).
#include <gtest/gtest.h>

#include <vector>

#include "lab06_test_util.h"

namespace lab06 {
namespace {

using testing::bitwise_diff;

// run_ranks with the deterministic mode and one CPU allocator per rank (exact statistics).
template <typename Fn>
void on_ranks(int world, Fn fn) {
  gtl::dist::RunOptions options = testing::fast();
  for (int r = 0; r < world; ++r) options.allocators.push_back(gtl::make_cpu_allocator());
  gtl::dist::run_ranks(world, fn, options);
}

// bf16 widens to fp32 exactly, so comparing the widened values bit for bit compares the bf16 bits.
std::vector<float> widened(const Tensor& bf16) {
  return bf16.to(gtl::DType::Float32).to_vector();
}

TEST(FsdpBf16, GathersTheFullValuesRoundedToBf16BitForBit) {
  for (int n : {1, 2, 3, 5}) {
    on_ranks(n, [&](Communicator& comm) {
      auto model = gtl::nn::make_model(lab_model());
      std::vector<Unit> units = make_units(*model, comm);
      for (std::size_t u = 0; u < units.size(); ++u) {
        const gtl::nn::FlatParameter& flat = *units[u].flat;
        const std::vector<float> expected = widened(flat.values().to(gtl::DType::BFloat16));
        const Tensor full = gather_bf16_values(comm, flat);
        ASSERT_TRUE(full.defined()) << "N " << n << ", unit " << u << ": no tensor returned";
        ASSERT_EQ(full.dtype(), gtl::DType::BFloat16)
            << "N " << n << ", unit " << u << ": the compute copy must be bf16";
        EXPECT_EQ(bitwise_diff(widened(full), expected), "")
            << "N " << n << ", rank " << comm.rank() << ", unit " << u
            << ": the gathered copy must be every rank's fp32 shard rounded to bf16 (round to "
               "nearest even, Tensor::to), in rank order: the full values rounded, bit for bit";
      }
    });
  }
}

TEST(FsdpBf16, MovesExactlyHalfTheBytesOfAnFp32Gather) {
  for (int n : {2, 3, 5}) {
    on_ranks(n, [&](Communicator& comm) {
      auto model = gtl::nn::make_model(lab_model());
      std::vector<Unit> units = make_units(*model, comm);
      for (std::size_t u = 0; u < units.size(); ++u) {
        const gtl::nn::FlatParameter& flat = *units[u].flat;
        // fp32 FSDP's gather of this unit on a ring: N - 1 shards of 4-byte elements.
        const int64_t fp32_bytes =
            int64_t{n - 1} * gtl::nn::ShardLayout(flat.numel(), n).shard_size() * 4;
        const int64_t before = comm.counters("all_gather").bytes_sent;
        const Tensor full = gather_bf16_values(comm, flat);
        const int64_t sent = comm.counters("all_gather").bytes_sent - before;
        EXPECT_EQ(2 * sent, fp32_bytes)
            << "N " << n << ", rank " << comm.rank() << ", unit " << u << ": sent " << sent
            << " bytes, fp32 FSDP sends " << fp32_bytes
            << ": gather the bf16 shards (2 bytes each), not the fp32 values";
        EXPECT_EQ(bf16_gather_bytes_sent(flat), fp32_bytes / 2)
            << "N " << n << ", unit " << u
            << ": bf16_gather_bytes_sent: (N - 1) shards of 2-byte elements";
      }
    });
  }
}

TEST(FsdpBf16, KeepsTheFp32ShardsAndPersistentBytes) {
  for (int n : {2, 3}) {
    on_ranks(n, [&](Communicator& comm) {
      auto model = gtl::nn::make_model(lab_model());
      std::vector<Unit> units = make_units(*model, comm);
      for (Unit& unit : units) unit.flat->release_values(), unit.flat->release_grads();
      const std::shared_ptr<gtl::Allocator> allocator = gtl::current_allocator(gtl::Device::cpu());
      const int64_t persistent = allocator->stats().allocated_bytes;
      for (std::size_t u = 0; u < units.size(); ++u) {
        const gtl::nn::FlatParameter& flat = *units[u].flat;
        const std::vector<float> shard = flat.shard_values().to_vector();
        {
          const Tensor full = gather_bf16_values(comm, flat);
          comm.barrier();  // the peers have consumed the messages this rank sent (its memory)
          EXPECT_EQ(allocator->stats().allocated_bytes - persistent, 2 * flat.padded_numel())
              << "N " << n << ", rank " << comm.rank() << ", unit " << u
              << ": while the compute copy lives the rank holds its persistent bytes plus the "
                 "bf16 copy, 2 bytes per padded element (no fp32 full values, no leftover "
                 "temporaries)";
        }
        comm.barrier();
        EXPECT_EQ(allocator->stats().allocated_bytes, persistent)
            << "N " << n << ", rank " << comm.rank() << ", unit " << u
            << ": the persistent fp32 bytes per rank must not change";
        EXPECT_EQ(flat.shard_values().dtype(), gtl::DType::Float32)
            << "unit " << u << ": the shard (master weights) stays fp32";
        EXPECT_EQ(bitwise_diff(flat.shard_values().to_vector(), shard), "")
            << "N " << n << ", rank " << comm.rank() << ", unit " << u
            << ": the fp32 shard must be left untouched (round a copy, not the master weights)";
      }
    });
  }
}

}  // namespace
}  // namespace lab06
