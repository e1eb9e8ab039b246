// TODO 8: bf16 compute copies under FSDP. On units the test builds itself (make_units of the lab
// model; the memory test's with UnitBuffers::ShardsOnly, as FSDP keeps them between uses), so
// TODO 4 need not be done:
//   - the gathered copy is the fp32 full values rounded to bf16, bit for bit;
//   - the all-gather sends exactly half the bytes of fp32 FSDP's (the communicator's counters);
//   - the fp32 shards stay as they were, and the rank's persistent bytes do not change: the bf16
//     copy is the only thing the gather adds while it lives (the rank's allocator).
// The lab model on fixed worlds and a seeded model and world (lab06_cases.h); each test records
// what the student's functions produced for lab06_judge, which recomputes it from the seed.
#include <gtest/gtest.h>

#include <vector>

#include "lab06_cases.h"
#include "lab06_student_call.h"
#include "lab06_test_util.h"

namespace lab06 {
namespace {

// The student's functions, each rank's call inside TODO 8's scope (lab06_student_call.h): these
// shadow lab06's in the tests below. Around them the ranks only build units (FlatParameter's
// constructor materialises nothing through materialize_values) and pass barriers.
Tensor gather_bf16_values(Communicator& comm, const gtl::nn::FlatParameter& flat) {
  const auto call = lab06_student_call::todo8();
  return lab06::gather_bf16_values(comm, flat);
}
int64_t bf16_gather_bytes_sent(const gtl::nn::FlatParameter& flat) {
  const auto call = lab06_student_call::todo8();
  return lab06::bf16_gather_bytes_sent(flat);
}

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

// What a rank's gathers produced (for the judge): per unit, the widened compute copy, the bytes
// the all-gather sent and bf16_gather_bytes_sent.
struct Gathered {
  std::vector<std::vector<float>> copies;
  std::vector<int64_t> sent, reported;
};
void record_gathers(gtl::judge::Outputs& out, const std::vector<Gathered>& ranks) {
  for (const Gathered& g : ranks) {
    out.record(g.copies.size());
    for (std::size_t u = 0; u < g.copies.size(); ++u) {
      out.record(g.copies[u].size());
      out.record_digest(g.copies[u].data(), g.copies[u].size());
      out.record(g.sent[u]);
      out.record(g.reported[u]);
    }
  }
}

// Every unit of `config` gathered as bf16 on N ranks: the copy must be the fp32 full values
// rounded, the gather must send half fp32 FSDP's bytes; what came is recorded for the judge.
void check_gathers(gtl::judge::Outputs& out, const gtl::nn::ModelConfig& config, int n,
                   const std::string& input) {
  std::vector<Gathered> ranks(static_cast<std::size_t>(n));
  on_ranks(n, [&](Communicator& comm) {
    auto model = gtl::nn::make_model(config);
    std::vector<Unit> units = make_units(*model, comm);
    Gathered& mine = ranks[static_cast<std::size_t>(comm.rank())];
    for (std::size_t u = 0; u < units.size(); ++u) {
      const gtl::nn::FlatParameter& flat = *units[u].flat;
      const std::vector<float> expected = widened(flat.values().to(gtl::DType::BFloat16));
      // fp32 FSDP's gather of this unit, as the communicator counts it.
      int64_t before = comm.counters("all_gather").bytes_sent;
      {
        Tensor fp32_full = Tensor::empty({flat.padded_numel()}, gtl::DType::Float32);
        comm.all_gather(flat.shard_values(), fp32_full);
      }
      const int64_t fp32_bytes = comm.counters("all_gather").bytes_sent - before;
      before = comm.counters("all_gather").bytes_sent;
      const Tensor full = gather_bf16_values(comm, flat);
      const int64_t sent = comm.counters("all_gather").bytes_sent - before;
      const bool bf16 = full.defined() && full.dtype() == gtl::DType::BFloat16;
      mine.copies.push_back(bf16 ? widened(full) : std::vector<float>{});
      mine.sent.push_back(sent);
      mine.reported.push_back(bf16_gather_bytes_sent(flat));
      const std::string at =
          input + ", rank " + std::to_string(comm.rank()) + ", unit " + std::to_string(u);
      ASSERT_TRUE(full.defined()) << at << ": no tensor returned";
      ASSERT_EQ(full.dtype(), gtl::DType::BFloat16) << at << ": the compute copy must be bf16";
      EXPECT_EQ(bitwise_diff(mine.copies.back(), expected), "")
          << at
          << ": the gathered copy must be the full fp32 values rounded to bf16 (round to nearest "
             "even), bit for bit";
      EXPECT_EQ(2 * sent, fp32_bytes)
          << at << ": the all-gather sent " << sent << " bytes from this rank, expected "
          << fp32_bytes / 2 << " (fp32 FSDP's gather of this unit sends " << fp32_bytes
          << "): revisit what crosses the wire in a bf16-compute gather";
      EXPECT_EQ(mine.reported.back(), sent)
          << at << ": bf16_gather_bytes_sent returned " << mine.reported.back()
          << ", the communicator counted " << sent
          << " bytes sent by this rank in that all-gather: revisit what a ring all-gather sends";
    }
  });
  record_gathers(out, ranks);
}

TEST(FsdpBf16, GathersTheFullValuesRoundedToBf16BitForBit) {
  gtl::judge::Outputs out("FsdpBf16.GathersTheFullValuesRoundedToBf16BitForBit");
  for (int n : {1, 2, 3, 5}) check_gathers(out, lab_model(), n, "N " + std::to_string(n));
}

TEST(FsdpBf16, GathersAndMovesHalfTheBytesOnASeededModel) {
  const std::string test = "FsdpBf16.GathersAndMovesHalfTheBytesOnASeededModel";
  gtl::judge::Outputs out(test);
  const lab06_cases::RunCase c = lab06_cases::seeded_run(test);
  check_gathers(out, c.config.model, c.world, lab06_cases::describe(c));
}

// What a rank held (for the judge): per unit, the bytes the live copy added, the bytes left after
// it, and the fp32 shard afterwards.
struct Held {
  std::vector<int64_t> added, left;
  std::vector<std::vector<float>> shards;
};

TEST(FsdpBf16, KeepsTheFp32ShardsAndPersistentBytes) {
  gtl::judge::Outputs out("FsdpBf16.KeepsTheFp32ShardsAndPersistentBytes");
  for (int n : {2, 3}) {
    std::vector<Held> ranks(static_cast<std::size_t>(n));
    on_ranks(n, [&](Communicator& comm) {
      Held& mine = ranks[static_cast<std::size_t>(comm.rank())];
      auto model = gtl::nn::make_model(lab_model());
      std::vector<Unit> units =
          make_units(*model, comm, gtl::Device::cpu(), UnitBuffers::ShardsOnly);
      const std::shared_ptr<gtl::Allocator> allocator = gtl::current_allocator(gtl::Device::cpu());
      const int64_t persistent = allocator->stats().allocated_bytes;
      for (std::size_t u = 0; u < units.size(); ++u) {
        const gtl::nn::FlatParameter& flat = *units[u].flat;
        const std::vector<float> shard = flat.shard_values().to_vector();
        {
          const Tensor full = gather_bf16_values(comm, flat);
          comm.barrier();  // the peers have consumed the messages this rank sent (its memory)
          mine.added.push_back(allocator->stats().allocated_bytes - persistent);
          EXPECT_EQ(allocator->stats().allocated_bytes - persistent, 2 * flat.padded_numel())
              << "N " << n << ", rank " << comm.rank() << ", unit " << u
              << ": while the compute copy lives the rank holds its persistent bytes plus the "
                 "bf16 copy, 2 bytes per padded element (no fp32 full values, no leftover "
                 "temporaries)";
        }
        comm.barrier();
        mine.left.push_back(allocator->stats().allocated_bytes - persistent);
        mine.shards.push_back(flat.shard_values().to(gtl::DType::Float32).to_vector());
        EXPECT_EQ(allocator->stats().allocated_bytes, persistent)
            << "N " << n << ", rank " << comm.rank() << ", unit " << u
            << ": the persistent fp32 bytes per rank must not change";
        EXPECT_EQ(flat.shard_values().dtype(), gtl::DType::Float32)
            << "unit " << u << ": the shard (master weights) stays fp32";
        EXPECT_EQ(bitwise_diff(flat.shard_values().to_vector(), shard), "")
            << "N " << n << ", rank " << comm.rank() << ", unit " << u
            << ": the fp32 shard (the master weights) changed: the persistent values must come out "
               "of a gather unchanged";
      }
    });
    for (const Held& h : ranks) {
      for (std::size_t u = 0; u < h.shards.size(); ++u) {
        out.record(h.added[u]);
        out.record(h.left[u]);
        out.record_digest(h.shards[u].data(), h.shards[u].size());
      }
    }
  }
}

}  // namespace
}  // namespace lab06
