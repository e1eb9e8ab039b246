// TODO 5 on its own: Fsdp::prefetch(u) on units the test builds itself (make_units of the lab
// model with UnitBuffers::ShardsOnly: as FSDP keeps them between uses), waited for through
// in_flight(u), so neither TODO 4's hooks nor its gather need be done. For every unit, every rank:
//   - prefetch(u) issues exactly one all-gather, and an asynchronous one (all_gather_async: the
//     trace's async flag), whose Work in_flight(u) then holds;
//   - once that Work is done, the unit's full values are its weights bit for bit, and the rank's
//     allocator holds exactly 4 x the unit's padded size more than before (the full values);
//   - prefetch(u) again, in flight or done, issues and allocates nothing;
//   - prefetch(-1) and prefetch(num_units()), out of range, do nothing.
// The lab model on fixed worlds and a seeded model and world (lab06_cases.h); each test records
// what the student's prefetch produced for lab06_judge, which recomputes it from the seed.
#include <gtest/gtest.h>

#include <vector>

#include "lab06_cases.h"
#include "lab06_student_call.h"
#include "lab06_test_util.h"

namespace lab06 {
namespace {

using testing::bitwise_diff;

// What one prefetch of unit u did on one rank (recorded for the judge, in this order).
struct Prefetched {
  int64_t issued = 0;     // all-gathers the first prefetch(u) issued
  bool async = false;     // the last of them was an asynchronous one
  bool has_work = false;  // in_flight(u) held a Work
  int64_t added = 0;      // allocated bytes after it completed, minus before
  int64_t again = 0;      // all-gathers and bytes of prefetch(u) repeated (in flight, then done)
  std::vector<float> values;  // the unit's full values once the Work is done
};
void record(gtl::judge::Outputs& out, const std::vector<std::vector<Prefetched>>& ranks) {
  for (const std::vector<Prefetched>& units : ranks) {
    out.record(units.size());
    for (const Prefetched& p : units) {
      out.record(p.issued);
      out.record(int{p.async});
      out.record(int{p.has_work});
      out.record(p.added);
      out.record(p.again);
      out.record_digest(p.values.data(), p.values.size());
    }
  }
}

// The student's Fsdp built inside TODO 4's scope, and its prefetch(u) called inside TODO 5's
// (lab06_student_call.h). Between them the ranks only read traces and allocators, wait on Work
// and pass barriers.
Fsdp scoped_fsdp(Communicator& comm, gtl::nn::Module& model, std::vector<Unit>& units) {
  const auto call = lab06_student_call::todo4();
  return Fsdp(comm, model, units, /*prefetch=*/1);
}
void prefetch(Fsdp& fsdp, int64_t u) {
  const auto call = lab06_student_call::todo5();
  fsdp.prefetch(u);
}

// All-gathers issued so far: the trace records a call when it is made (the counters count an
// asynchronous one only when it completes).
int64_t all_gathers(const Communicator& comm) {
  return static_cast<int64_t>(comm.trace()->events("all_gather").size());
}

// Every unit of `config` prefetched on N ranks, one after another.
void check_prefetches(gtl::judge::Outputs& out, const gtl::nn::ModelConfig& config, int n,
                      const std::string& input) {
  std::vector<std::vector<Prefetched>> ranks(static_cast<std::size_t>(n));
  gtl::dist::RunOptions options = testing::fast();
  for (int r = 0; r < n; ++r) options.allocators.push_back(gtl::make_cpu_allocator());
  gtl::dist::run_ranks(
      n,
      [&](Communicator& comm) {
        std::vector<std::vector<float>> weights;  // each unit's full values, from a twin model
        {
          auto twin = gtl::nn::make_model(config);
          for (Unit& unit : make_units(*twin, comm))
            weights.push_back(unit.flat->values().to_vector());
        }
        auto model = gtl::nn::make_model(config);
        std::vector<Unit> units =
            make_units(*model, comm, gtl::Device::cpu(), UnitBuffers::ShardsOnly);
        Fsdp fsdp = scoped_fsdp(comm, *model, units);
        const auto allocator = gtl::current_allocator(gtl::Device::cpu());
        std::vector<Prefetched>& mine = ranks[static_cast<std::size_t>(comm.rank())];
        for (std::size_t u = 0; u < units.size(); ++u) {
          const std::string at =
              input + ", rank " + std::to_string(comm.rank()) + ", unit " + std::to_string(u);
          const gtl::nn::FlatParameter& flat = *units[u].flat;
          const int64_t bytes = allocator->stats().allocated_bytes, calls = all_gathers(comm);
          Prefetched p;
          prefetch(fsdp, static_cast<int64_t>(u));
          p.issued = all_gathers(comm) - calls;
          const std::vector<gtl::dist::TraceEvent> gathers = comm.trace()->events("all_gather");
          p.async = !gathers.empty() && gathers.back().async;
          p.has_work = fsdp.in_flight(static_cast<int64_t>(u)).has_value();
          prefetch(fsdp, static_cast<int64_t>(u));  // in flight: nothing more
          if (p.has_work) fsdp.in_flight(static_cast<int64_t>(u))->wait();
          comm.barrier();  // every peer's part has arrived and its temporaries are gone
          prefetch(fsdp, static_cast<int64_t>(u));  // done: the values are there, nothing more
          p.again = all_gathers(comm) - calls - p.issued;
          p.added = allocator->stats().allocated_bytes - bytes;
          p.values = flat.has_values() ? flat.values().to_vector() : std::vector<float>{};
          mine.push_back(p);
          EXPECT_EQ(p.issued, 1) << at << ": prefetch(u) must issue exactly one all-gather";
          EXPECT_TRUE(p.async && p.has_work)
              << at << ": prefetch must issue the gather with all_gather_async and keep its Work "
              << "(in_flight(u)) for gather(u) to wait on; a synchronous all_gather leaves "
              << "nothing for the unit's compute to overlap";
          EXPECT_EQ(p.again, 0) << at << ": prefetch(u) of a unit whose values are in flight or "
                                << "present must issue nothing";
          EXPECT_EQ(p.added, 4 * flat.padded_numel())
              << at << ": after the prefetch the rank holds " << p.added << " bytes more, expected "
              << "exactly the unit's full values (" << 4 * flat.padded_numel() << " bytes)";
          EXPECT_EQ(bitwise_diff(p.values, weights[u]), "")
              << at << ": once its Work is done, the prefetched full values must be the unit's "
              << "weights (every rank's shard, in rank order)";
          comm.barrier();
        }
      },
      options);
  record(out, ranks);
}

TEST(PrefetchAlone, IssuesOneAsyncGatherIntoFreshValues) {
  gtl::judge::Outputs out("PrefetchAlone.IssuesOneAsyncGatherIntoFreshValues");
  for (int n : {2, 3, 5}) check_prefetches(out, lab_model(), n, "N " + std::to_string(n));
}

TEST(PrefetchAlone, IssuesOneAsyncGatherIntoFreshValuesOnASeededModel) {
  const std::string test = "PrefetchAlone.IssuesOneAsyncGatherIntoFreshValuesOnASeededModel";
  gtl::judge::Outputs out(test);
  const lab06_cases::RunCase c = lab06_cases::seeded_run(test);
  check_prefetches(out, c.config.model, c.world, lab06_cases::describe(c));
}

// Before the first unit's forward and the last unit's backward there is no next unit.
TEST(PrefetchAlone, DoesNothingPastEitherEnd) {
  gtl::judge::Outputs out("PrefetchAlone.DoesNothingPastEitherEnd");
  std::vector<int64_t> issued(2);
  gtl::dist::run_ranks(
      2,
      [&](Communicator& comm) {
        auto model = gtl::nn::make_model(lab_model());
        std::vector<Unit> units =
            make_units(*model, comm, gtl::Device::cpu(), UnitBuffers::ShardsOnly);
        Fsdp fsdp = scoped_fsdp(comm, *model, units);
        const int64_t calls = all_gathers(comm);
        prefetch(fsdp, -1);
        prefetch(fsdp, fsdp.num_units());
        issued[static_cast<std::size_t>(comm.rank())] = all_gathers(comm) - calls;
        for (const Unit& unit : units) {
          EXPECT_FALSE(unit.flat->has_values())
              << "rank " << comm.rank() << ": prefetch(-1) or prefetch(num_units()) touched a "
              << "unit; out of range it must do nothing";
        }
      },
      testing::fast());
  for (std::size_t r = 0; r < issued.size(); ++r) {
    out.record(issued[r]);
    EXPECT_EQ(issued[r], 0) << "rank " << r << ": prefetch(-1) and prefetch(num_units()) must "
                            << "issue no all-gather (there is no unit before the first or after "
                            << "the last)";
  }
}

}  // namespace
}  // namespace lab06
