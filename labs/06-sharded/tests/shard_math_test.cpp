// TODO 1: shard arithmetic. Checked against the properties that make sharding work (equal shards
// that tile the padded buffer, padding only at the tail and less than one element per rank) and
// against the core's ShardLayout, the arithmetic the FlatParameter of the other TODOs uses.
#include <gtest/gtest.h>

#include "gtl/nn/flat_parameter.h"
#include "gtl_judge_output.h"
#include "lab06_cases.h"
#include "lab06_student_call.h"
#include "sharded.h"

namespace lab06 {
namespace {

// The student's functions, each called inside TODO 1's scope (lab06_student_call.h): these
// shadow lab06's in the tests below, and the core's ShardLayout they compare with is built
// outside every scope.
int64_t padded_numel(int64_t numel, int n) {
  const auto call = lab06_student_call::todo1();
  return lab06::padded_numel(numel, n);
}
int64_t shard_size(int64_t numel, int n) {
  const auto call = lab06_student_call::todo1();
  return lab06::shard_size(numel, n);
}
int64_t shard_offset(int64_t numel, int n, int rank) {
  const auto call = lab06_student_call::todo1();
  return lab06::shard_offset(numel, n, rank);
}
int64_t shard_real_numel(int64_t numel, int n, int rank) {
  const auto call = lab06_student_call::todo1();
  return lab06::shard_real_numel(numel, n, rank);
}
int shard_owner(int64_t i, int64_t numel, int n) {
  const auto call = lab06_student_call::todo1();
  return lab06::shard_owner(i, numel, n);
}

TEST(ShardMath, PaddedBufferIsTheSmallestMultipleOfTheWorldSize) {
  for (int n = 1; n <= 7; ++n) {
    for (int64_t numel : {1, 2, 5, 6, 7, 12, 13, 100, 101}) {
      const int64_t padded = padded_numel(numel, n);
      EXPECT_EQ(padded % n, 0) << "numel " << numel << ", N " << n << ": padded " << padded
                               << " must cut into N equal shards (a multiple of N)";
      EXPECT_GE(padded, numel) << "numel " << numel << ", N " << n << ": padding adds, never cuts";
      EXPECT_LT(padded - numel, n) << "numel " << numel << ", N " << n << ": padded " << padded
                                   << " is not the SMALLEST multiple of N that holds numel";
    }
  }
}

TEST(ShardMath, ShardsTileThePaddedBufferInRankOrder) {
  for (int n = 1; n <= 7; ++n) {
    for (int64_t numel : {1, 3, 5, 7, 13, 101}) {
      const std::string at = "numel " + std::to_string(numel) + ", N " + std::to_string(n);
      const int64_t size = shard_size(numel, n);
      EXPECT_GT(size, 0) << at << ": every shard holds at least one element, got " << size;
      int64_t end = 0, real = 0;  // where the shards so far end; their real elements
      for (int r = 0; r < n; ++r) {
        EXPECT_EQ(shard_offset(numel, n, r), end)
            << at << ": rank " << r << "'s shard starts at " << shard_offset(numel, n, r)
            << ", expected " << end << ", where the shards of ranks 0 .. " << r - 1
            << " end (equal shards, in rank order, no gap, no overlap)";
        end += size;
        const int64_t mine = shard_real_numel(numel, n, r);
        EXPECT_GE(mine, 0) << at << ", rank " << r << ": a count of real elements, got " << mine;
        EXPECT_LE(mine, size) << at << ", rank " << r << ": " << mine
                              << " real elements in a shard of " << size;
        real += mine;
      }
      EXPECT_EQ(end, padded_numel(numel, n))
          << at << ": the N shards end at element " << end << ", the padded buffer at "
          << padded_numel(numel, n) << ": the shards must tile it exactly";
      EXPECT_EQ(real, numel) << at << ": the shards' real elements add up to " << real
                             << ", expected numel";
    }
  }
}

TEST(ShardMath, OwnerIsTheInverseOfTheShardOffsets) {
  for (int n = 1; n <= 7; ++n) {
    for (int64_t numel : {1, 5, 7, 13}) {
      for (int64_t i = 0; i < gtl::nn::ShardLayout(numel, n).padded_numel(); ++i) {
        const int owner = shard_owner(i, numel, n);
        ASSERT_TRUE(owner >= 0 && owner < n)
            << "element " << i << " of " << numel << " for N " << n << ": owner " << owner;
        EXPECT_TRUE(shard_offset(numel, n, owner) <= i &&
                    i < shard_offset(numel, n, owner) + shard_size(numel, n))
            << "element " << i << " (numel " << numel << ", N " << n << ") lies in rank " << owner
            << "'s shard: owner(i) must be the rank whose shard holds element i";
      }
    }
  }
}

TEST(ShardMath, AgreesWithTheCoreLayoutTheFlatParameterUses) {
  for (int n = 1; n <= 9; ++n) {
    for (int64_t numel = 1; numel <= 40; ++numel) {
      const gtl::nn::ShardLayout core(numel, n);
      ASSERT_EQ(padded_numel(numel, n), core.padded_numel()) << "numel " << numel << ", N " << n;
      for (int r = 0; r < n; ++r) {
        ASSERT_EQ(shard_real_numel(numel, n, r), core.real_numel(r))
            << "numel " << numel << ", N " << n << ", rank " << r << ": real elements of the shard";
      }
    }
  }
}

// Seeded sizes and world sizes (up to 2^20 elements on up to 64 ranks), against the core's
// ShardLayout; the judge recomputes every figure from the arithmetic itself.
TEST(ShardMath, SeededSizesAndWorldSizes) {
  gtl::judge::Outputs out("ShardMath.SeededSizesAndWorldSizes");
  for (const lab06_cases::ShardCase& c : lab06_cases::seeded_shard_cases()) {
    const gtl::nn::ShardLayout core(c.numel, c.world);
    const std::string at = "numel " + std::to_string(c.numel) + ", N " + std::to_string(c.world) +
                           ", " + gtl::test_seed::describe();
    const int64_t padded = padded_numel(c.numel, c.world), shard = shard_size(c.numel, c.world);
    out.record(padded);
    out.record(shard);
    EXPECT_EQ(padded, core.padded_numel()) << at << ": the padded size";
    EXPECT_EQ(shard, core.shard_size()) << at << ": the shard size";
    std::vector<int64_t> offsets, reals, owners;
    for (int r = 0; r < c.world; ++r) {
      offsets.push_back(shard_offset(c.numel, c.world, r));
      reals.push_back(shard_real_numel(c.numel, c.world, r));
      EXPECT_EQ(offsets.back(), core.shard_offset(r)) << at << ": rank " << r << "'s offset";
      EXPECT_EQ(reals.back(), core.real_numel(r)) << at << ": rank " << r << "'s real elements";
    }
    for (int64_t i : lab06_cases::owner_probes(c, core.padded_numel(), core.shard_size())) {
      owners.push_back(shard_owner(i, c.numel, c.world));
      EXPECT_EQ(owners.back(), core.owner(i)) << at << ": the owner of element " << i;
    }
    out.record_all(offsets);
    out.record_all(reals);
    out.record_all(owners);
  }
}

}  // namespace
}  // namespace lab06
