// Process grid: three split() calls, each grouping the ranks that share the other two
// coordinates. The key is the world rank, so ranks in a group are ordered as in the world.
#include "gtl/distributed/process_grid.h"

#include "gtl_reference_guard.h"  // grader/channel: the references refuse to run in a student call

namespace gtl::dist {

ProcessGrid::ProcessGrid(Communicator& world, int tp, int pp, int dp)
    : world_(world), tp_(tp), pp_(pp), dp_(dp) {
  gtl::grading::reference_guard("gtl::dist::ProcessGrid::ProcessGrid");
  GTL_CHECK(tp >= 1 && pp >= 1 && dp >= 1 && tp * pp * dp == world.world_size(),
            "ProcessGrid: tp * pp * dp must equal the world size "
                << world.world_size() << ", got " << tp << " * " << pp << " * " << dp);
  const int r = world.rank();
  tp_rank_ = r % tp;
  pp_rank_ = (r / tp) % pp;
  dp_rank_ = r / (tp * pp);
  tp_group_ = world.split(dp_rank_ * pp + pp_rank_, r);
  pp_group_ = world.split(dp_rank_ * tp + tp_rank_, r);
  dp_group_ = world.split(pp_rank_ * tp + tp_rank_, r);
}

}  // namespace gtl::dist
