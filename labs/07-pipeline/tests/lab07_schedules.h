// Schedules of lab 07's tests written out by hand, as text, so that the tests of one TODO do not
// depend on another TODO being done (the executor's and the bubble's tests run these tables, not
// your gpipe_schedule / one_f_one_b_schedule), plus the configurations of the real-process run.
// Read them: they are the pictures of the handout in another form.
#pragma once

#include <map>
#include <sstream>
#include <string>
#include <utility>
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

// GPipe, literally the header's words: F0 .. F(m-1), then B0 .. B(m-1), on every stage.
inline Schedule gpipe_table(int p, int64_t m) {
  std::ostringstream text;
  for (int64_t i = 0; i < m; ++i) text << "F" << i << " ";
  for (int64_t i = 0; i < m; ++i) text << "B" << i << " ";
  return parse(std::vector<std::string>(static_cast<std::size_t>(p), text.str()));
}

// 1F1B for the (p, m) the tests use, written out by hand: the handout's pictures for more shapes.
// How long each stage's warm-up is, TODO 4 derives from the memory bound.
inline Schedule one_f_one_b_table(int p, int64_t m) {
  static const std::map<std::pair<int, int64_t>, std::vector<std::string>> tables = {
      {{1, 4}, {"F0 B0 F1 B1 F2 B2 F3 B3"}},
      {{2, 4},
       {"F0 F1 B0 F2 B1 F3 B2 B3",  //
        "F0 B0 F1 B1 F2 B2 F3 B3"}},
      {{3, 5},
       {"F0 F1 F2 B0 F3 B1 F4 B2 B3 B4",  //
        "F0 F1 B0 F2 B1 F3 B2 F4 B3 B4",  //
        "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4"}},
      {{3, 2},
       {"F0 F1 B0 B1",  //
        "F0 F1 B0 B1",  //
        "F0 B0 F1 B1"}},
      {{4, 1}, {"F0 B0", "F0 B0", "F0 B0", "F0 B0"}},
      {{4, 2}, {"F0 F1 B0 B1", "F0 F1 B0 B1", "F0 F1 B0 B1", "F0 B0 F1 B1"}},
      {{4, 4},
       {"F0 F1 F2 F3 B0 B1 B2 B3",  //
        "F0 F1 F2 B0 F3 B1 B2 B3",  //
        "F0 F1 B0 F2 B1 F3 B2 B3",  //
        "F0 B0 F1 B1 F2 B2 F3 B3"}},
      {{4, 8},
       {"F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7",  //
        "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 B6 B7",  //
        "F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 F6 B5 F7 B6 B7",  //
        "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7"}},
      {{5, 7},
       {"F0 F1 F2 F3 F4 B0 F5 B1 F6 B2 B3 B4 B5 B6",  //
        "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 B4 B5 B6",  //
        "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 B5 B6",  //
        "F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 F6 B5 B6",  //
        "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6"}},
  };
  const auto it = tables.find({p, m});
  GTL_CHECK(it != tables.end(), "no 1F1B table for p = " << p << ", m = " << m);
  return parse(it->second);
}

// The real-process run: the lab model in p = 1 or 2 stages, 12 rows in 4 micro-batches.
inline PipelineConfig mpi_config(int p) {
  GTL_CHECK(p == 1 || p == 2, "lab07_pipeline_train runs on 1 or 2 ranks, not " << p);
  PipelineConfig config;
  config.boundaries = p == 1 ? std::vector<int64_t>{0, 6} : std::vector<int64_t>{0, 3, 6};
  return config;
}

}  // namespace lab07::testing
