// memory_timeline_svg (timeline_svg.h): replays the events into bytes live per category, then
// draws each category as a band on top of the ones below it, a step per event.
#include "timeline_svg.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <sstream>

namespace lab04 {

namespace {

constexpr double kWidth = 960, kHeight = 420;
constexpr double kLeft = 80, kRight = 190, kTop = 40, kBottom = 50;  // margins: axes, legend
// One colour per category, in Category's order.
constexpr std::array<const char*, kNumCategories> kColours = {"#4c72b0", "#dd8452", "#55a868",
                                                              "#8172b3", "#c44e52", "#937860"};

std::string fixed(double x, int decimals = 1) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, x);
  return buf;
}

// The step between axis ticks: 1, 2 or 5 times a power of ten, about 5 ticks up to `top`.
double tick_step(double top) {
  double step = 1;
  while (step * 10 < top) step *= 10;
  for (double m : {0.1, 0.2, 0.5, 1.0})
    if (top / (step * m) <= 6) return step * m;
  return step;
}

}  // namespace

std::string memory_timeline_svg(const std::vector<TimelineEvent>& events,
                                const std::string& title) {
  // cum[i][c]: bytes live after event i in categories 0..c together (the top of band c).
  std::vector<std::array<double, kNumCategories>> cum(events.size());
  std::array<double, kNumCategories> live{};
  double peak = 0;
  std::size_t peak_at = 0;
  for (std::size_t i = 0; i < events.size(); ++i) {
    live[static_cast<std::size_t>(events[i].category)] += static_cast<double>(events[i].bytes);
    double total = 0;
    for (int c = 0; c < kNumCategories; ++c) cum[i][c] = total += live[c];
    if (total > peak) peak = total, peak_at = i;
  }
  const double mb = 1 << 20;
  const double top = std::max(peak / mb, 1e-3) * 1.08;
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  const double n = static_cast<double>(std::max<std::size_t>(events.size(), 1));
  auto x = [&](double i) { return kLeft + plot_w * i / n; };
  auto y = [&](double bytes) { return kTop + plot_h * (1 - bytes / mb / top); };

  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\"" << kHeight
      << "\" viewBox=\"0 0 " << kWidth << " " << kHeight
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << kLeft << "\" y=\"24\" font-size=\"15\">" << title << "</text>\n";
  // Bands, top category first so that each lower band is drawn over the one above's base.
  for (int c = kNumCategories - 1; c >= 0; --c) {
    svg << "<path class=\"band\" data-category=\"" << category_name(static_cast<Category>(c))
        << "\" fill=\"" << kColours[c] << "\" d=\"M" << fixed(x(0)) << "," << fixed(y(0));
    for (std::size_t i = 0; i < events.size(); ++i) {
      const double d = static_cast<double>(i);
      svg << " L" << fixed(x(d)) << "," << fixed(y(cum[i][c])) << " L" << fixed(x(d + 1)) << ","
          << fixed(y(cum[i][c]));
    }
    svg << " L" << fixed(x(n)) << "," << fixed(y(0)) << " Z\"/>\n";
  }
  // Axes and ticks (MB).
  svg << "<path d=\"M" << kLeft << "," << kTop << " V" << fixed(y(0)) << " H" << kLeft + plot_w
      << "\" stroke=\"black\" fill=\"none\"/>\n";
  const double step = tick_step(top);
  for (double v = 0; v <= top; v += step) {
    svg << "<text x=\"" << kLeft - 6 << "\" y=\"" << fixed(y(v * mb) + 4)
        << "\" text-anchor=\"end\">" << fixed(v, step < 1 ? 1 : 0) << "</text>\n";
  }
  svg << "<text transform=\"translate(18," << fixed(kTop + plot_h / 2)
      << ") rotate(-90)\" text-anchor=\"middle\">MB live (allocator's requested bytes)</text>\n"
      << "<text x=\"" << fixed(kLeft + plot_w / 2) << "\" y=\"" << kHeight - 14
      << "\" text-anchor=\"middle\">event (each allocation or free), " << events.size()
      << " in all</text>\n";
  // The peak: a dashed line at its event, labelled with its bytes.
  if (!events.empty()) {
    const double px = x(static_cast<double>(peak_at) + 0.5);
    svg << "<path class=\"peak\" d=\"M" << fixed(px) << "," << kTop << " V" << fixed(y(0))
        << "\" stroke=\"black\" stroke-dasharray=\"4,3\"/>\n"
        << "<text x=\"" << fixed(px + 4) << "\" y=\"" << kTop + 12 << "\">peak "
        << static_cast<long long>(peak) << " B at event " << peak_at << "</text>\n";
  }
  // Legend, in stacking order from the top.
  for (int c = kNumCategories - 1, row = 0; c >= 0; --c, ++row) {
    const double ly = kTop + 10 + 20 * row;
    svg << "<rect x=\"" << kWidth - kRight + 16 << "\" y=\"" << ly << "\" width=\"12\" "
        << "height=\"12\" fill=\"" << kColours[c] << "\"/><text x=\"" << kWidth - kRight + 34
        << "\" y=\"" << ly + 10 << "\">" << category_name(static_cast<Category>(c)) << "</text>\n";
  }
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace lab04
