// timeline_svg (timeline_svg.h): lanes, boxes, a time axis and a legend.
#include "gtl/distributed/timeline_svg.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <utility>

#include "gtl/runtime/error.h"

namespace gtl::dist {

namespace {

constexpr double kWidth = 960;
constexpr double kLeft = 150, kRight = 130, kTop = 44, kBottom = 60;  // labels, figures, axis
constexpr double kLane = 18, kLaneGap = 4, kRankGap = 12;

// Forward compute dark, backward light (a pipeline's schedule shows as the alternation of the
// two), communication orange, waiting grey.
constexpr const char* kForward = "#4c72b0";
constexpr const char* kBackward = "#a6bddb";
constexpr const char* kCommunication = "#dd8452";
constexpr const char* kIdle = "#d9d9d9";

const char* colour(const Interval& iv) {
  switch (iv.category) {
    case Category::Compute:
      return iv.op == "backward" ? kBackward : kForward;
    case Category::Communication:
      return kCommunication;
    case Category::IdleWait:
      return kIdle;
    case Category::Module:
      return "none";
  }
  return "none";
}

std::string fixed(double x, int decimals = 1) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, x);
  return buf;
}

std::string escaped(const std::string& text) {
  std::string out;
  for (const char ch : text) {
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += ch;
    }
  }
  return out;
}

// The step between axis ticks: 1, 2 or 5 times a power of ten, at most 8 ticks up to `top`.
double tick_step(double top) {
  double step = 1e-3;
  while (step * 10 < top) step *= 10;
  for (const double m : {0.1, 0.2, 0.5, 1.0}) {
    if (top / (step * m) <= 8) return step * m;
  }
  return step;
}

}  // namespace

std::string timeline_svg(const Timeline& timeline, const std::string& title) {
  const double step_us = std::max(timeline.step_time() * 1e6, 1e-3);
  const double plot_w = kWidth - kLeft - kRight;
  const auto ranks = static_cast<int>(timeline.ranks.size());
  const double lanes_h = ranks * (2 * kLane + kLaneGap + kRankGap);
  const double height = kTop + lanes_h + kBottom;
  auto x = [&](double seconds) { return kLeft + plot_w * (seconds * 1e6) / step_us; };
  auto lane_y = [&](int rank, TimelineStream s) {
    return kTop + rank * (2 * kLane + kLaneGap + kRankGap) +
           (s == TimelineStream::Communication ? kLane + kLaneGap : 0);
  };

  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\""
      << fixed(height, 0) << "\" viewBox=\"0 0 " << kWidth << " " << fixed(height, 0)
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << kLeft << "\" y=\"24\" font-size=\"15\">" << escaped(title) << "</text>\n";
  for (int r = 0; r < ranks; ++r) {
    const RankTimeline& rank = timeline.ranks[static_cast<std::size_t>(r)];
    for (const TimelineStream s : {TimelineStream::Compute, TimelineStream::Communication}) {
      const double y = lane_y(r, s);
      svg << "<text x=\"" << kLeft - 8 << "\" y=\"" << fixed(y + 13) << "\" text-anchor=\"end\">"
          << "rank " << r << " " << stream_name(s) << "</text>\n";
      for (const Interval& iv : rank.intervals) {
        // Module spans are display only, and a zero-length pass (a Flatten) has nothing to show.
        if (iv.stream != s || iv.category == Category::Module || iv.end <= iv.start) continue;
        const double x0 = x(iv.start), w = std::max(x(iv.end) - x0, 0.5);
        svg << "<rect class=\"interval\" data-category=\"" << category_name(iv.category)
            << "\" x=\"" << fixed(x0, 2) << "\" y=\"" << fixed(y) << "\" width=\"" << fixed(w, 2)
            << "\" height=\"" << kLane << "\" fill=\"" << colour(iv)
            << "\" stroke=\"white\" stroke-width=\"0.5\"><title>" << escaped(iv.name) << ": "
            << fixed(iv.start * 1e6, 2) << " to " << fixed(iv.end * 1e6, 2)
            << " us</title></rect>\n";
      }
    }
    // The rank's figures, right of its lanes.
    svg << "<text x=\"" << kWidth - kRight + 8 << "\" y=\""
        << fixed(lane_y(r, TimelineStream::Compute) + 13) << "\">idle "
        << fixed(rank.bubble_fraction, 3) << "</text>\n<text x=\"" << kWidth - kRight + 8
        << "\" y=\"" << fixed(lane_y(r, TimelineStream::Communication) + 13) << "\">comm hidden "
        << fixed(rank.hidden_comm_fraction, 3) << "</text>\n";
  }
  // Time axis.
  const double axis_y = kTop + lanes_h;
  svg << "<path d=\"M" << kLeft << "," << fixed(axis_y) << " H" << kLeft + plot_w
      << "\" stroke=\"black\"/>\n";
  const double tick = tick_step(step_us);
  for (double t = 0; t <= step_us * (1 + 1e-9); t += tick) {
    const double tx = kLeft + plot_w * t / step_us;
    svg << "<path d=\"M" << fixed(tx) << "," << fixed(axis_y) << " v5\" stroke=\"black\"/>"
        << "<text x=\"" << fixed(tx) << "\" y=\"" << fixed(axis_y + 18)
        << "\" text-anchor=\"middle\">" << fixed(t, tick < 1 ? 2 : 0) << "</text>\n";
  }
  svg << "<text x=\"" << fixed(kLeft + plot_w / 2) << "\" y=\"" << fixed(axis_y + 38)
      << "\" text-anchor=\"middle\">simulated time (us); step " << fixed(step_us, 1)
      << " us</text>\n";
  // Legend.
  const std::pair<const char*, const char*> legend[] = {{kForward, "compute (forward)"},
                                                        {kBackward, "compute (backward)"},
                                                        {kCommunication, "communication"},
                                                        {kIdle, "idle (waiting)"}};
  double lx = kLeft;
  for (const auto& [fill, label] : legend) {
    svg << "<rect x=\"" << fixed(lx) << "\" y=\"" << fixed(height - 16) << "\" width=\"12\" "
        << "height=\"12\" fill=\"" << fill << "\"/><text x=\"" << fixed(lx + 16) << "\" y=\""
        << fixed(height - 6) << "\">" << label << "</text>\n";
    lx += 160;
  }
  svg << "</svg>\n";
  return svg.str();
}

void write_timeline_svg(const Timeline& timeline, const std::string& path,
                        const std::string& title) {
  std::ofstream out(path);
  GTL_CHECK(out, "write_timeline_svg: cannot open '" << path << "' for writing");
  out << timeline_svg(timeline, title);
  out.close();
  GTL_CHECK(out, "write_timeline_svg: writing '" << path << "' failed");
}

}  // namespace gtl::dist
