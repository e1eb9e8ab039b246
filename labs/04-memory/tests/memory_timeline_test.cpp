// Lab 04, TODO 3: the memory timeline, replayed against the allocator's own statistics.
#include <gtest/gtest.h>

#include <string>

#include "gtl_judge_output.h"
#include "lab04_cases.h"
#include "memory_lab.h"

namespace {

using gtl::judge::Outputs;
using lab04::Category;

// A recorded run of lab04_cases::kTimelineSteps steps (the second has AdamW's moments, so its
// backward is the run's peak): the fixed small model, and one drawn from the grading seed.
struct Recorded {
  lab04::ModelConfig config;
  int64_t batch = 32;
  lab04::MemoryTimeline timeline;
  lab04::RecordedRun run;
};
Recorded* record(const lab04_cases::Shape& shape) {
  auto* out = new Recorded;
  out->config = shape.config;
  out->batch = shape.batch;
  out->run = lab04::record_training_step(out->config, out->batch, lab04_cases::kTimelineSteps,
                                         out->timeline);
  return out;
}
const Recorded& recorded() {
  static const Recorded* r = record(lab04_cases::fixed_timeline_shape());
  return *r;
}
const Recorded& seeded() {
  static const Recorded* r = record(lab04_cases::seeded_timeline_shape());
  return *r;
}

// What the judge recomputes of a run: every event (category, bytes, live), in order.
void record_events(Outputs& out, const std::vector<lab04::TimelineEvent>& events) {
  std::vector<int64_t> categories, bytes, live;
  for (const lab04::TimelineEvent& e : events) {
    categories.push_back(static_cast<int64_t>(e.category));
    bytes.push_back(e.bytes);
    live.push_back(e.live);
  }
  out.record_all(categories);
  out.record_all(bytes);
  out.record_all(live);
}

void expect_replays(const Recorded& r, Outputs& out) {
  const auto& events = r.timeline.events();
  record_events(out, events);
  out.record(r.timeline.live_bytes());
  for (int c = 0; c < lab04::kNumCategories; ++c) out.record(r.timeline.live_bytes(Category(c)));
  ASSERT_EQ(events.size(), r.run.observed.size())
      << "TODO 3: expected one event per allocation AND per free (" << r.run.observed.size()
      << " of them), got " << events.size() << ". Forgot the frees?";
  int64_t live = 0;
  for (std::size_t i = 0; i < events.size(); ++i) {
    live += events[i].bytes;
    ASSERT_EQ(events[i].live, r.run.observed[i])
        << "TODO 3: after event " << i << " the allocator held " << r.run.observed[i]
        << " bytes, your timeline says " << events[i].live
        << ". `live` is the total of every category just AFTER the event, in requested bytes.";
    ASSERT_EQ(live, events[i].live)
        << "TODO 3: event " << i << ": the sum of the events' bytes so far is " << live
        << " but its `live` is " << events[i].live << ": a free must carry minus its bytes.";
    ASSERT_GE(events[i].live, 0) << "TODO 3: negative live bytes at event " << i;
  }
  EXPECT_EQ(r.timeline.live_bytes(), 0)
      << "TODO 3: everything the run allocated was freed by its end; live_bytes() should be 0";
  for (int c = 0; c < lab04::kNumCategories; ++c)
    EXPECT_EQ(r.timeline.live_bytes(Category(c)), 0)
        << "TODO 3: category " << lab04::category_name(Category(c))
        << " should end at 0 live bytes: a free takes its bytes from the category of ITS "
           "allocation, not from the scope current when it is freed";
}

void expect_measured_peak(const Recorded& r, Outputs& out) {
  out.record(r.timeline.peak_bytes());
  out.record(r.timeline.peak_event());
  EXPECT_EQ(r.timeline.peak_bytes(), r.run.measured_peak)
      << "TODO 3: the allocator's peak_allocated_bytes rose by " << r.run.measured_peak
      << " during the run; your timeline's peak_bytes() is " << r.timeline.peak_bytes();
  const int64_t at = r.timeline.peak_event();
  ASSERT_GE(at, 0) << "TODO 3: peak_event() returned " << at << " for a recorded run";
  const auto& events = r.timeline.events();
  ASSERT_LT(at, static_cast<int64_t>(events.size()));
  EXPECT_EQ(events[static_cast<std::size_t>(at)].live, r.run.measured_peak)
      << "TODO 3: event " << at << " (your peak_event) has live "
      << events[static_cast<std::size_t>(at)].live << ", the peak is " << r.run.measured_peak
      << ": an off-by-one between the event and the live bytes after it?";
  for (int64_t i = 0; i < at; ++i)
    ASSERT_LT(events[static_cast<std::size_t>(i)].live, r.run.measured_peak)
        << "TODO 3: event " << i << " already reached the peak: peak_event() is the FIRST one";
}

TEST(MemoryTimeline, PeakEventIsTheFirstToReachThePeak) {
  lab04::MemoryTimeline t;
  int a = 0, b = 0;
  t.on_alloc(&a, 100, Category::Activations);  // event 0: live 100
  t.on_free(&a);                               // event 1: live 0
  t.on_alloc(&b, 100, Category::Temporaries);  // event 2: live 100 again
  Outputs("MemoryTimeline.PeakEventIsTheFirstToReachThePeak")
      .record_all(std::vector<int64_t>{t.peak_bytes(), t.peak_event(),
                                       t.bytes_at_peak(Category::Activations),
                                       t.bytes_at_peak(Category::Temporaries)});
  EXPECT_EQ(t.peak_bytes(), 100);
  EXPECT_EQ(t.peak_event(), 0) << "TODO 3: events 0 and 2 both reach the peak of 100 bytes: "
                                  "expected peak_event() 0, got "
                               << t.peak_event();
  EXPECT_EQ(t.bytes_at_peak(Category::Activations), 100)
      << "TODO 3: just after event 0 the activations held 100 bytes";
  EXPECT_EQ(t.bytes_at_peak(Category::Temporaries), 0)
      << "TODO 3: just after event 0 the temporaries held nothing";
}

void expect_categories(const Recorded& r, Outputs& out) {
  for (int c = 0; c < lab04::kNumCategories; ++c) {
    out.record(r.timeline.bytes_at_peak(Category(c)));
    out.record(r.timeline.peak_bytes(Category(c)));
  }
  const int64_t params = gtl::nn::make_model(r.config)->num_parameters();
  int64_t in = 1;
  for (int64_t d : r.config.input) in *= d;
  // Its own peak: the core registers each weight with its zero gradient, which the harness then
  // gives fresh bytes under Gradients, so weights briefly hold both (2 x 4 bytes x parameters).
  const struct {
    Category category;
    int64_t expected, own_peak;
    const char* formula;
  } rows[] = {
      {Category::Weights, 4 * params, 8 * params, "4 bytes x parameters"},
      {Category::Gradients, 4 * params, 4 * params, "4 bytes x parameters"},
      {Category::OptimizerState, 8 * params, 8 * params, "AdamW: 2 moments x 4 bytes x parameters"},
      {Category::Batch, r.batch * (4 * in + 8), r.batch * (4 * in + 8),
       "float32 images + int64 labels"},
  };
  for (const auto& row : rows) {
    EXPECT_EQ(r.timeline.bytes_at_peak(row.category), row.expected)
        << "TODO 3: at the peak (second step's backward) " << lab04::category_name(row.category)
        << " should hold " << row.formula << " = " << row.expected << " bytes, got "
        << r.timeline.bytes_at_peak(row.category);
    EXPECT_EQ(r.timeline.peak_bytes(row.category), row.own_peak)
        << "TODO 3: " << lab04::category_name(row.category) << " holds at most " << row.own_peak
        << " bytes in this run (its own peak, not its bytes at the total's peak); got "
        << r.timeline.peak_bytes(row.category);
  }
  int64_t sum = 0;
  for (int c = 0; c < lab04::kNumCategories; ++c) sum += r.timeline.bytes_at_peak(Category(c));
  EXPECT_EQ(sum, r.timeline.peak_bytes())
      << "TODO 3: the categories' bytes at the peak must add up to the peak";
}

TEST(MemoryTimeline, FreesAreMatchedToTheirAllocations) {
  Outputs out("MemoryTimeline.FreesAreMatchedToTheirAllocations");
  lab04::MemoryTimeline t;
  int a = 0, b = 0;
  {
    const lab04::MemoryCategory scope(Category::Weights);
    t.on_alloc(&a, 100, lab04::MemoryCategory::current());
  }
  t.on_alloc(&b, 30, Category::Activations);
  t.on_alloc(nullptr, 0, Category::Activations);  // a 0-byte tensor: no event
  EXPECT_EQ(t.events().size(), 2u)
      << "TODO 3: after two allocations and a 0-byte one of a null pointer: expected 2 events, got "
      << t.events().size();
  out.record(t.events().size());
  t.on_free(&a);  // freed under another category: still the weights' bytes
  out.record_all(std::vector<int64_t>{t.live_bytes(Category::Weights),
                                      t.live_bytes(Category::Activations), t.live_bytes()});
  record_events(out, t.events());
  EXPECT_EQ(t.live_bytes(Category::Weights), 0) << "TODO 3: the 100-byte allocation made under "
                                                   "Weights, freed after that scope ended: weights "
                                                   "expected 0 live bytes after, got "
                                                << t.live_bytes(Category::Weights);
  EXPECT_EQ(t.live_bytes(Category::Activations), 30);
  EXPECT_EQ(t.live_bytes(), 30);
  ASSERT_EQ(t.events().size(), 3u);
  EXPECT_EQ(t.events()[2], (lab04::TimelineEvent{Category::Weights, -100, 30}))
      << "TODO 3: the event of that free: expected {weights, -100, live 30}, got {"
      << lab04::category_name(t.events()[2].category) << ", " << t.events()[2].bytes << ", live "
      << t.events()[2].live << "}";
  EXPECT_THROW(t.on_free(&a), gtl::Error) << "TODO 3: a double free must throw gtl::Error";
  int stranger = 0;
  EXPECT_THROW(t.on_free(&stranger), gtl::Error)
      << "TODO 3: freeing a pointer never allocated must throw gtl::Error";
  EXPECT_EQ(t.live_bytes(), 30) << "TODO 3: a rejected free changes nothing";
  out.record(t.live_bytes());
  out.record(t.events().size());
}

// The JSON as the report reads it: its events, peak and categories, and the timeline read back.
void record_json(Outputs& out, const nlohmann::json& j, const lab04::MemoryTimeline& back) {
  std::vector<std::string> categories;
  std::vector<int64_t> bytes, live;
  for (const nlohmann::json& e : j.at("events")) {
    categories.push_back(e.at("category").get<std::string>());
    bytes.push_back(e.at("bytes").get<int64_t>());
    live.push_back(e.at("live").get<int64_t>());
  }
  out.record_all(categories);
  out.record_all(bytes);
  out.record_all(live);
  out.record(j.at("peak").at("bytes").get<int64_t>());
  out.record(j.at("peak").at("event").get<int64_t>());
  for (int c = 0; c < lab04::kNumCategories; ++c)
    out.record(j.at("peak").at("by_category").at(lab04::category_name(Category(c))).get<int64_t>());
  record_events(out, back.events());
  out.record(back.peak_bytes());
  out.record(back.peak_event());
  for (int c = 0; c < lab04::kNumCategories; ++c) {
    out.record(back.bytes_at_peak(Category(c)));
    out.record(back.peak_bytes(Category(c)));
  }
}

void expect_json_round_trip(const Recorded& r, Outputs& out) {
  const nlohmann::json j = r.timeline.to_json();
  ASSERT_TRUE(j.contains("events") && j["events"].is_array())
      << "TODO 3: to_json() needs an \"events\" array";
  ASSERT_EQ(j["events"].size(), r.timeline.events().size());
  EXPECT_EQ(j["events"][0]["category"], "weights")
      << "TODO 3: categories are written by category_name()";
  EXPECT_EQ(j["peak"]["bytes"], r.run.measured_peak);
  EXPECT_EQ(j["peak"]["event"], r.timeline.peak_event());
  EXPECT_EQ(j["peak"]["by_category"]["optimizer_state"],
            r.timeline.bytes_at_peak(Category::OptimizerState));
  // Through text, as the report reads it.
  const lab04::MemoryTimeline back =
      lab04::MemoryTimeline::from_json(nlohmann::json::parse(j.dump()));
  record_json(out, j, back);
  EXPECT_TRUE(back.events() == r.timeline.events())
      << "TODO 3: from_json(to_json()) must give back the same events";
  EXPECT_EQ(back.peak_bytes(), r.timeline.peak_bytes());
  EXPECT_EQ(back.peak_event(), r.timeline.peak_event());
  for (int c = 0; c < lab04::kNumCategories; ++c) {
    EXPECT_EQ(back.bytes_at_peak(Category(c)), r.timeline.bytes_at_peak(Category(c)))
        << "TODO 3: " << lab04::category_name(Category(c)) << " at the peak after the round trip";
    EXPECT_EQ(back.peak_bytes(Category(c)), r.timeline.peak_bytes(Category(c)))
        << "TODO 3: " << lab04::category_name(Category(c)) << "'s own peak after the round trip";
  }
}

void expect_summary(const Recorded& r, Outputs& out) {
  const std::string s = r.timeline.summary();
  std::string one_line = s;  // the judge reads one line
  for (char& ch : one_line)
    if (ch == '\n') ch = '|';
  out.record(one_line);
  EXPECT_NE(s.find(std::to_string(r.run.measured_peak)), std::string::npos)
      << "TODO 3: the summary should state the peak in bytes (" << r.run.measured_peak
      << "); got:\n"
      << s;
  for (int c = 0; c < lab04::kNumCategories; ++c) {
    const std::string line = std::string(lab04::category_name(Category(c))) + ": " +
                             std::to_string(r.timeline.bytes_at_peak(Category(c)));
    EXPECT_NE(s.find(line), std::string::npos)
        << "TODO 3: the summary should have the line \"" << line << " ...\"; got:\n"
        << s;
  }
}

// Each check on the fixed run and on the run drawn from the grading seed (lab04_cases.h): its shape
// and the seed are in every failure message.
TEST(MemoryTimeline, ReplaysTheAllocatorStatisticsAtEveryEvent) {
  Outputs out("MemoryTimeline.ReplaysTheAllocatorStatisticsAtEveryEvent");
  expect_replays(recorded(), out);
}
TEST(MemoryTimeline, ReplaysASeededRun) {
  SCOPED_TRACE(lab04_cases::seeded_timeline_shape().describe());
  Outputs out("MemoryTimeline.ReplaysASeededRun");
  expect_replays(seeded(), out);
}
TEST(MemoryTimeline, PeakIsTheMeasuredPeakToTheByte) {
  Outputs out("MemoryTimeline.PeakIsTheMeasuredPeakToTheByte");
  expect_measured_peak(recorded(), out);
}
TEST(MemoryTimeline, PeakOfASeededRunIsTheMeasuredPeak) {
  SCOPED_TRACE(lab04_cases::seeded_timeline_shape().describe());
  Outputs out("MemoryTimeline.PeakOfASeededRunIsTheMeasuredPeak");
  expect_measured_peak(seeded(), out);
}
TEST(MemoryTimeline, CategoriesAtThePeakMatchTheFormulas) {
  Outputs out("MemoryTimeline.CategoriesAtThePeakMatchTheFormulas");
  expect_categories(recorded(), out);
}
TEST(MemoryTimeline, CategoriesOfASeededRunMatchTheFormulas) {
  SCOPED_TRACE(lab04_cases::seeded_timeline_shape().describe());
  Outputs out("MemoryTimeline.CategoriesOfASeededRunMatchTheFormulas");
  expect_categories(seeded(), out);
}
TEST(MemoryTimeline, JsonRoundTrips) {
  Outputs out("MemoryTimeline.JsonRoundTrips");
  expect_json_round_trip(recorded(), out);
}
TEST(MemoryTimeline, JsonOfASeededRunRoundTrips) {
  SCOPED_TRACE(lab04_cases::seeded_timeline_shape().describe());
  Outputs out("MemoryTimeline.JsonOfASeededRunRoundTrips");
  expect_json_round_trip(seeded(), out);
}
TEST(MemoryTimeline, SummaryNamesThePeakAndEachCategory) {
  Outputs out("MemoryTimeline.SummaryNamesThePeakAndEachCategory");
  expect_summary(recorded(), out);
}
TEST(MemoryTimeline, SummaryOfASeededRunNamesThePeakAndEachCategory) {
  SCOPED_TRACE(lab04_cases::seeded_timeline_shape().describe());
  Outputs out("MemoryTimeline.SummaryOfASeededRunNamesThePeakAndEachCategory");
  expect_summary(seeded(), out);
}

}  // namespace
