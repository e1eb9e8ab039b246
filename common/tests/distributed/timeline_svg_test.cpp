// timeline_svg on a timeline written by hand: what is drawn, where, and what is escaped. The
// plot is 680 px wide from x = 150 (timeline_svg.cpp's margins), so an interval of the 4 us step
// below from 0 to 2 us is the box x = 150, width 340.
#include <string>

#include "gtl/distributed/timeline_svg.h"
// After the timeline's headers on purpose (see HeadersInAnyOrderAgreeOnTheCommunicator).
#include "gtl/distributed/in_process.h"
#include "gtl_test.h"

namespace gtl::dist {
namespace {

Interval interval(TimelineStream s, Category c, const std::string& name, double start_us,
                  double end_us) {
  Interval iv;
  iv.stream = s;
  iv.category = c;
  iv.name = name;
  iv.start = start_us * 1e-6;
  iv.end = end_us * 1e-6;
  return iv;
}

Timeline two_ranks() {
  Timeline tl;
  tl.ranks.resize(2);
  RankTimeline& r0 = tl.ranks[0];
  r0.intervals = {
      interval(TimelineStream::Compute, Category::Module, "forward model", 0, 4),
      interval(TimelineStream::Compute, Category::Compute, "forward 0.fc1", 0, 2),
      interval(TimelineStream::Compute, Category::IdleWait, "wait all_reduce", 2, 4),
      interval(TimelineStream::Communication, Category::Communication, "all_reduce <x&y>", 1, 3)};
  r0.end_time = 4e-6;
  r0.bubble_fraction = 0.5;
  r0.hidden_comm_fraction = 0.5;
  RankTimeline& r1 = tl.ranks[1];
  r1.intervals = {interval(TimelineStream::Compute, Category::Compute, "forward 0.flatten", 0, 0),
                  interval(TimelineStream::Compute, Category::Compute, "forward 0.fc1", 0, 2),
                  interval(TimelineStream::Compute, Category::Compute, "backward 0.fc1", 2, 4)};
  r1.intervals.back().op = "backward";
  r1.end_time = 4e-6;
  return tl;
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(TimelineSvg, DrawsEveryIntervalButModuleSpansOnATimeAxis) {
  const std::string svg = timeline_svg(two_ranks(), "Two ranks");
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u) << svg;
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
  EXPECT_EQ(count(svg, "class=\"interval\""), 5)
      << "three intervals of rank 0 (its module span is display only) and two of rank 1 (its "
         "zero-length pass is not drawn)";
  EXPECT_EQ(count(svg, "data-category=\"idle_wait\""), 1);
  EXPECT_NE(svg.find("x=\"150.00\" y=\"44.0\" width=\"340.00\""), std::string::npos)
      << "rank 0's first compute interval, 0 to 2 us of a 4 us step, on the top lane: " << svg;
  EXPECT_NE(svg.find("x=\"320.00\" y=\"66.0\" width=\"340.00\""), std::string::npos)
      << "its all_reduce, 1 to 3 us, on the communication lane below: " << svg;
  EXPECT_NE(svg.find(">rank 1 communication</text>"), std::string::npos);
  EXPECT_NE(svg.find(">idle 0.500</text>"), std::string::npos);
  EXPECT_NE(svg.find(">4.00</text>"), std::string::npos) << "the axis ends at the step time";
  EXPECT_NE(svg.find("step 4.0 us"), std::string::npos);
  EXPECT_NE(svg.find("x=\"490.00\" y=\"96.0\" width=\"340.00\" height=\"18\" fill=\"#a6bddb\""),
            std::string::npos)
      << "rank 1's backward, 2 to 4 us, in the backward colour on its compute lane: " << svg;
}

TEST(TimelineSvg, EscapesNamesAndIsAPureFunctionOfTheTimeline) {
  const std::string svg = timeline_svg(two_ranks(), "A <title> & more");
  EXPECT_NE(svg.find("all_reduce &lt;x&amp;y&gt;: 1.00 to 3.00 us"), std::string::npos) << svg;
  EXPECT_NE(svg.find("A &lt;title&gt; &amp; more"), std::string::npos);
  EXPECT_EQ(svg.find("<x&y>"), std::string::npos);
  EXPECT_EQ(svg, timeline_svg(two_ranks(), "A <title> & more"));
}

TEST(TimelineSvg, AnEmptyTimelineIsStillADocument) {
  const std::string svg = timeline_svg(Timeline{}, "nothing");
  EXPECT_EQ(count(svg, "class=\"interval\""), 0);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
}

// This file includes timeline.h before the communicator's header. A name timeline.h declared in
// gtl::dist once changed what `Stream` meant inside the communicator's class here, so this file
// laid the communicator out differently from the core and crashed on its first call.
TEST(TimelineSvg, HeadersInAnyOrderAgreeOnTheCommunicator) {
  run_ranks(2, [](Communicator& comm) {
    comm.trace()->clear();
    Tensor t = Tensor::ones({4});
    comm.all_reduce(t);
    EXPECT_EQ(t.to_vector(), std::vector<float>(4, 2.f));
    EXPECT_EQ(comm.trace()->events(TraceKind::Collective).size(), 1u);
  });
}

}  // namespace
}  // namespace gtl::dist
