// Point-to-point messages (a pipeline), split() and the 3-D process grid, in-process; and the
// launcher helpers (backend choice, environment bootstrap).
#include <cstdlib>
#include <optional>
#include "dist_test_util.h"

#include "gtl/distributed/launch.h"
#include "gtl/distributed/mpi_communicator.h"
#include "gtl/distributed/nccl_communicator.h"
#include "gtl/distributed/process_grid.h"
#include "gtl_test.h"

namespace gtl::dist {
namespace {

TEST(DistGroups, PipelinePassesActivationsStageByStage) {
  for (int world = 2; world <= 8; ++world) {
    run_ranks(world, [&](Communicator& comm) {
      const int r = comm.rank();
      for (int micro = 0; micro < 3; ++micro) {
        Tensor x = Tensor::full({2, 5}, micro);
        if (r > 0) comm.recv(x, r - 1);
        EXPECT_EQ(x.to_vector(), std::vector<float>(10, float(micro + r)))
            << "stage " << r << ", micro-batch " << micro << ": every earlier stage added 1";
        x.fill_(micro + r + 1);
        if (r < world - 1) comm.send(x, r + 1);
      }
    });
  }
}

TEST(DistGroups, RecvWithTheWrongSizeFailsClearly) {
  EXPECT_THROW(run_ranks(
                   2,
                   [](Communicator& comm) {
                     if (comm.rank() == 0) comm.send(Tensor::zeros({4}), 1);
                     if (comm.rank() == 1) comm.recv(Tensor::zeros({5}), 0);
                   },
                   testing::fast_options()),
               DistError);
}

TEST(DistGroups, SplitByParityOrderedByKey) {
  run_ranks(7, [](Communicator& comm) {
    const int r = comm.rank();
    auto sub = comm.split(r % 2, -r);  // key -r: the highest rank becomes rank 0
    ASSERT_NE(sub, nullptr);
    const int members = r % 2 == 0 ? 4 : 3;
    EXPECT_EQ(sub->world_size(), members);
    Tensor me = Tensor::full({1}, r, DType::Int32);
    Tensor all = Tensor::zeros({members}, DType::Int32);
    sub->all_gather(me, all);
    std::vector<float> expected;
    for (int q = 6; q >= 0; --q) {
      if (q % 2 == r % 2) expected.push_back(float(q));
    }
    EXPECT_EQ(all.to_vector(), expected) << "split(color, key) orders a group by key";
    EXPECT_EQ(expected[sub->rank()], float(r)) << "sub-rank of world rank " << r;
    Tensor t = Tensor::full({3}, r);
    sub->all_reduce(t);
    float sum = 0;
    for (float q : expected) sum += q;
    EXPECT_EQ(t.to_vector(), std::vector<float>(3, sum)) << "all_reduce within the group only";
    EXPECT_EQ(comm.counters("split").calls, 1);
  });
}

TEST(DistGroups, NegativeColorJoinsNoGroup) {
  run_ranks(4, [](Communicator& comm) {
    auto sub = comm.split(comm.rank() == 3 ? -1 : 0, comm.rank());
    if (comm.rank() == 3) {
      EXPECT_EQ(sub, nullptr);
    } else {
      ASSERT_NE(sub, nullptr);
      EXPECT_EQ(sub->world_size(), 3);
      sub->barrier();
    }
  });
}

TEST(DistGroups, ProcessGridGroupsHoldTheRightRanks) {
  struct Dims {
    int tp, pp, dp;
  };
  for (Dims d : {Dims{1, 1, 1}, Dims{2, 1, 1}, Dims{1, 1, 3}, Dims{2, 2, 2}, Dims{2, 1, 3},
                 Dims{1, 3, 2}, Dims{4, 2, 1}}) {
    const int world = d.tp * d.pp * d.dp;
    run_ranks(world, [&](Communicator& comm) {
      ProcessGrid grid(comm, d.tp, d.pp, d.dp);
      const int r = comm.rank();
      EXPECT_EQ((grid.dp_rank() * d.pp + grid.pp_rank()) * d.tp + grid.tp_rank(), r)
          << "tensor parallelism is innermost: rank = (dp * pp_size + pp) * tp_size + tp";
      // Who is in each group, gathered through the group itself.
      auto members = [&](Communicator& g) {
        Tensor all = Tensor::zeros({g.world_size()}, DType::Int32);
        g.all_gather(Tensor::full({1}, r, DType::Int32), all);
        return all.to_vector();
      };
      std::vector<float> tp, pp, dp;
      for (int t = 0; t < d.tp; ++t)
        tp.push_back(float((grid.dp_rank() * d.pp + grid.pp_rank()) * d.tp + t));
      for (int p = 0; p < d.pp; ++p)
        pp.push_back(float((grid.dp_rank() * d.pp + p) * d.tp + grid.tp_rank()));
      for (int q = 0; q < d.dp; ++q)
        dp.push_back(float((q * d.pp + grid.pp_rank()) * d.tp + grid.tp_rank()));
      EXPECT_EQ(members(grid.tp_group()), tp) << "tp group of rank " << r;
      EXPECT_EQ(members(grid.pp_group()), pp) << "pp group of rank " << r;
      EXPECT_EQ(members(grid.dp_group()), dp) << "dp group of rank " << r;
      EXPECT_EQ(grid.tp_group().rank(), grid.tp_rank());
      EXPECT_EQ(grid.pp_group().rank(), grid.pp_rank());
      EXPECT_EQ(grid.dp_group().rank(), grid.dp_rank());
    });
  }
}

}  // namespace
}  // namespace gtl::dist

namespace gtl::dist {
namespace {

// The launcher helpers read the environment; each test restores what it changed.
class EnvVar {
 public:
  EnvVar(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~EnvVar() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(DistLaunch, BackendOverrideAndAutomaticChoice) {
  {
    EnvVar backend("GTL_DIST_BACKEND", "mpi");
    EXPECT_EQ(pick_backend(), Backend::Mpi) << "GTL_DIST_BACKEND overrides the choice";
  }
  {
    EnvVar backend("GTL_DIST_BACKEND", "carrier-pigeon");
    EXPECT_THROW(pick_backend(), Error);
  }
  if (!launched_by_mpi()) {
    EnvVar backend("GTL_DIST_BACKEND", nullptr);
    EXPECT_EQ(pick_backend(), nccl_available() ? Backend::Nccl : Backend::InProcess)
        << "GPUs and NCCL present: NCCL; otherwise, outside mpirun, in-process";
  }
}

// On a machine with GPUs and NCCL too: a CPU program run without a launcher must not be handed
// an NCCL communicator (the labs' training programs run on the CPU when started alone).
TEST(DistLaunch, WithoutALauncherTheWorldIsOneInProcessRankEvenWithAGpu) {
  if (launched_by_mpi()) GTEST_SKIP() << "needs a process not started by mpirun or srun";
  EnvVar backend("GTL_DIST_BACKEND", nullptr), size("WORLD_SIZE", nullptr);
  auto comm = init_from_environment();
  EXPECT_EQ(comm->world_size(), 1);
  EXPECT_EQ(comm->backend(), "in-process")
      << "without a launcher and without GTL_DIST_BACKEND the world is one in-process rank"
      << (nccl_available() ? ", although this machine has a GPU and NCCL" : "");
  Tensor t = Tensor::full({3}, 2.0);
  comm->all_reduce(t, ReduceOp::Avg);
  EXPECT_EQ(t.to_vector(), std::vector<float>(3, 2.f));
}

TEST(DistLaunch, TorchrunStyleVariablesAreChecked) {
  EnvVar size("WORLD_SIZE", "2"), rank("RANK", "5"), backend("GTL_DIST_BACKEND", "nccl");
  EXPECT_THROW(init_from_environment(), Error) << "RANK must lie in [0, WORLD_SIZE)";
}

TEST(DistLaunch, TimeoutFromTheEnvironment) {
  {
    EnvVar timeout("GTL_DIST_TIMEOUT_S", "2.5");
    EXPECT_EQ(default_timeout(), std::chrono::milliseconds(2500));
  }
  EnvVar timeout("GTL_DIST_TIMEOUT_S", nullptr);
  EXPECT_EQ(default_timeout(), std::chrono::seconds(60));
}

}  // namespace
}  // namespace gtl::dist
