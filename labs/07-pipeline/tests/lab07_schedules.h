// Schedules of lab 07's tests as text, so that the tests of one TODO do not depend on another TODO
// being done (the executor's and the bubble's tests run these orders and the harness's GPipe, not
// your one_f_one_b_schedule), plus the configurations of the real-process run.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "gtl/runtime/error.h"
#include "pipeline.h"
#include "pipeline_training.h"

namespace lab07::testing {

// "F0 F1 B0 B1" -> actions.
inline StageSchedule parse_stage(const std::string& text) {
  StageSchedule actions;
  std::istringstream in(text);
  std::string word;
  while (in >> word) {
    GTL_CHECK(word.size() >= 2 && (word[0] == 'F' || word[0] == 'B'), "bad action " << word);
    actions.push_back({word[0] == 'F' ? Op::Forward : Op::Backward, std::stoll(word.substr(1))});
  }
  return actions;
}

inline Schedule parse(const std::vector<std::string>& stages) {
  Schedule schedule;
  for (const std::string& s : stages) schedule.push_back(parse_stage(s));
  return schedule;
}

// The orders the other TODOs' tests run besides GPipe (the harness's gpipe_schedule), so that
// they do not depend on TODO 4. None of them is 1F1B: TODO 4's checks hold its order to the
// header's properties, not to a table.

// No pipelining at all: every stage runs F0 B0 F1 B1 ..., so stage 0 starts forward i+1 only when
// backward i has come back down the pipeline. Every stage holds one micro-batch at a time, and
// every action but the first and last on a stage pairs a send with a receive from the same
// neighbour.
inline Schedule serial_order(int p, int64_t m) {
  std::ostringstream text;
  for (int64_t i = 0; i < m; ++i) text << "F" << i << " B" << i << " ";
  return parse(std::vector<std::string>(static_cast<std::size_t>(p), text.str()));
}

// Two stages, four micro-batches, both neighbours sending at once: stage 0 runs three forwards
// ahead before its first backward, stage 1 alternates. From stage 0's second forward on, stage 0
// sends an activation while stage 1 sends a gradient, each then receiving from the other: a
// blocking executor deadlocks here, one that pairs them in send_recv does not.
inline Schedule both_neighbours_send() {
  return parse({"F0 F1 F2 B0 F3 B1 B2 B3", "F0 B0 F1 B1 F2 B2 F3 B3"});
}

// The real-process run: the lab model in p = 1 or 2 stages, 12 rows in 4 micro-batches, on the
// serial order (p = 1) or both_neighbours_send (p = 2).
inline PipelineConfig mpi_config(int p) {
  GTL_CHECK(p == 1 || p == 2, "lab07_pipeline_train runs on 1 or 2 ranks, not " << p);
  PipelineConfig config;
  config.boundaries = p == 1 ? std::vector<int64_t>{0, 6} : std::vector<int64_t>{0, 3, 6};
  return config;
}
inline Schedule mpi_schedule(int p) {
  return p == 1 ? serial_order(1, mpi_config(1).micro_batches) : both_neighbours_send();
}

}  // namespace lab07::testing
