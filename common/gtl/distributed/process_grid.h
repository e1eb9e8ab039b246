// The process grid of 3-D parallelism (as in picotron): world = dp x pp x tp ranks with tensor
// parallelism innermost, so the tp ranks of one layer are neighbours (on one node, on NVLink):
//
//   rank = (dp_rank * pp + pp_rank) * tp + tp_rank
//
// Each rank gets three sub-communicators: its tensor-parallel group (same dp and pp), its
// pipeline group (same dp and tp: the stages of one model replica) and its data-parallel
// group (same pp and tp: the replicas of one shard, which all-reduce gradients).
#pragma once

#include <memory>

#include "gtl/distributed/communicator.h"

namespace gtl::dist {

class ProcessGrid {
 public:
  // Collective over `world`: every rank must construct it with the same sizes.
  ProcessGrid(Communicator& world, int tp, int pp, int dp);

  int tp_size() const { return tp_; }
  int pp_size() const { return pp_; }
  int dp_size() const { return dp_; }
  int tp_rank() const { return tp_rank_; }
  int pp_rank() const { return pp_rank_; }
  int dp_rank() const { return dp_rank_; }
  bool is_first_stage() const { return pp_rank_ == 0; }
  bool is_last_stage() const { return pp_rank_ == pp_ - 1; }

  Communicator& world() const { return world_; }
  Communicator& tp_group() const { return *tp_group_; }
  Communicator& pp_group() const { return *pp_group_; }
  Communicator& dp_group() const { return *dp_group_; }

 private:
  Communicator& world_;
  int tp_, pp_, dp_;
  int tp_rank_, pp_rank_, dp_rank_;
  std::unique_ptr<Communicator> tp_group_, pp_group_, dp_group_;
};

}  // namespace gtl::dist
