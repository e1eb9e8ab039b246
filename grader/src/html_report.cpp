// A self-contained HTML report: inline CSS, inline SVG bars, no external resource, so it can
// be opened from a CI artifact or an email attachment as it is.
#include <cmath>
#include <iomanip>
#include <sstream>

#include "report.h"

namespace gtl::grader {
namespace {

std::string esc(const std::string& s) {
  return xml_escape(s);
}

std::string num(double x, int precision = 3) {
  std::ostringstream s;
  s << std::setprecision(precision) << x;
  return s.str();
}

const char* css() {
  return R"(body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;background:#f5f6f8;color:#1d2430}
main{max-width:1100px;margin:0 auto;padding:24px}
h1{font-size:24px;margin:0 0 4px}h2{font-size:19px;margin:0}
.sub{color:#5b6475;margin-bottom:18px}
.total{display:flex;gap:16px;align-items:baseline;background:#fff;border-radius:10px;padding:16px 20px;box-shadow:0 1px 3px #0002;margin-bottom:18px}
.big{font-size:34px;font-weight:700;white-space:nowrap}
.lab{background:#fff;border-radius:10px;padding:16px 20px;box-shadow:0 1px 3px #0002;margin-bottom:18px}
.labhead{display:flex;justify-content:space-between;align-items:baseline;margin-bottom:10px}
table{width:100%;border-collapse:collapse}
th{text-align:left;font-size:12px;text-transform:uppercase;letter-spacing:.04em;color:#5b6475;border-bottom:2px solid #e3e6eb;padding:6px 8px}
td{border-bottom:1px solid #eceef2;padding:7px 8px;vertical-align:top}
td.name{white-space:nowrap;min-width:150px}
td.pts{white-space:nowrap;font-variant-numeric:tabular-nums}
.badge{display:inline-block;padding:1px 9px;border-radius:10px;font-size:12px;font-weight:600;color:#fff}
.stretch{background:#8a94a6}.passed{background:#2e9d5b}.partial{background:#d69a18}.failed{background:#d2413a}.skipped{background:#6d7a8c}
.bar{height:8px;background:#e3e6eb;border-radius:4px;overflow:hidden;width:160px}
.bar>div{height:100%;background:#2e9d5b}
pre{background:#1d2430;color:#e8eaf0;padding:10px 12px;border-radius:6px;overflow-x:auto;font-size:12.5px;white-space:pre-wrap;word-break:break-word;max-height:360px;overflow-y:auto}
details summary{cursor:pointer;color:#2f5fb3;font-size:13px}
.warn{background:#fff4e0;border-left:4px solid #d69a18;padding:8px 12px;border-radius:4px;margin:8px 0}
.err{background:#fde9e8;border-left:4px solid #d2413a;padding:8px 12px;border-radius:4px;margin:8px 0}
.fig{margin-top:6px}
.note{color:#5b6475;font-size:13px}
.next{background:#e8f0fd;border-left:4px solid #2f5fb3;padding:10px 14px;border-radius:4px;margin:8px 0 18px;font-weight:600})";
}

// A horizontal bar of the measured figure against its threshold (a solid line, labelled above
// the bar), the partial-credit start (a dashed line) and, for a calibrated speed check, the
// solution's own figure on this GPU (a blue diamond). The axis spans twice the largest of them; a
// figure beyond it fills the bar and its exact value is in the label below.
std::string figure_svg(const CheckResult& c) {
  const double value = *c.figure, threshold = *c.threshold;
  const bool finite = std::isfinite(value);
  double scale = 2 * std::max(threshold, c.partial_from.value_or(0));
  if (c.solution_figure) scale = std::max(scale, 1.15 * *c.solution_figure);
  if (!(scale > 0)) scale = finite && value > 0 ? value * 1.25 : 1;
  const double w = 460, x0 = 4, len = w - 2 * x0;
  auto at = [&](double v) { return x0 + len * std::min(std::max(v, 0.0), scale) / scale; };
  const char* colour = c.status == Status::kPassed    ? "#2e9d5b"
                       : c.status == Status::kPartial ? "#d69a18"
                                                      : "#d2413a";
  auto label_x = [&](double x) { return std::min(std::max(x, x0 + 40), w - 60); };
  std::ostringstream s;
  s << "<svg class='fig' width='" << w << "' height='54' viewBox='0 0 " << w
    << " 54' xmlns='http://www.w3.org/2000/svg' role='img' aria-label='" << esc(c.figure_label)
    << "' font-family='system-ui,sans-serif'>";
  s << "<rect x='" << x0 << "' y='16' width='" << len << "' height='14' rx='3' fill='#eceef2'/>";
  if (finite && value > 0)
    s << "<rect x='" << x0 << "' y='16' width='" << std::max(at(value) - x0, 2.0)
      << "' height='14' rx='3' fill='" << colour << "'/>";
  if (c.partial_from)
    s << "<line x1='" << at(*c.partial_from) << "' x2='" << at(*c.partial_from)
      << "' y1='13' y2='33' stroke='#d69a18' stroke-width='2' stroke-dasharray='3,2'/>";
  s << "<line x1='" << at(threshold) << "' x2='" << at(threshold)
    << "' y1='12' y2='34' stroke='#1d2430' stroke-width='2'/>";
  if (c.solution_figure) {
    const double x = at(*c.solution_figure);
    s << "<path d='M" << x
      << " 17 l5 6 l-5 6 l-5 -6 z' fill='#2f6fd6'><title>the solution: " << num(*c.solution_figure)
      << " on " << esc(c.calibrated_on) << "</title></path>";
  }
  s << "<text x='" << label_x(at(threshold)) << "' y='10' font-size='11' text-anchor='middle' "
    << "fill='#1d2430'>" << (c.higher_is_better ? "needs &#8805; " : "limit &#8804; ")
    << num(threshold)
    << (c.partial_from ? " (partial from " + num(*c.partial_from) + ")" : std::string())
    << "</text>";
  s << "<text x='" << x0 << "' y='47' font-size='11' fill='#5b6475'>" << esc(c.figure_label)
    << ": <tspan font-weight='600' fill='#1d2430'>" << (finite ? num(value) : "n/a") << "</tspan>"
    << (c.solution_figure ? " &#183; <tspan fill='#2f6fd6'>&#9670;</tspan> the solution: " +
                                num(*c.solution_figure)
                          : std::string())
    << (c.higher_is_better ? " (higher is better)" : " (lower is better)")
    << (finite && value > scale ? " &#8594; off the scale" : "") << "</text>";
  s << "</svg>";
  return s.str();
}

}  // namespace

std::string html_report(const GradeResult& r) {
  std::ostringstream s;
  s << "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>Grading report</title>"
    << "<style>" << css() << "</style></head><body><main>";
  s << "<h1>Grading report</h1><div class='sub'>" << esc(r.submission) << "</div>";
  const double frac = r.max_score() > 0 ? r.score() / r.max_score() : 0;
  s << "<div class='total'><span class='big'>" << pts(r.score()) << " / " << pts(r.max_score())
    << "</span><div class='bar' style='width:260px'><div style='width:" << num(frac * 100)
    << "%'></div></div>";
  if (r.skipped_points() > 0)
    s << "<span class='note'>+ " << pts(r.skipped_points())
      << " points need a GPU or CUDA and were not graded on this machine (counted apart: neither "
         "zero nor "
         "full marks)</span>";
  s << "</div>";
  if (!r.error.empty())
    s << "<div class='err'><b>Grading problem:</b> " << esc(r.error) << "</div>";

  for (const auto& lab : r.labs) {
    s << "<section class='lab'><div class='labhead'><h2>Lab " << esc(lab.lab) << ": "
      << esc(lab.title) << "</h2><span class='big' style='font-size:20px'>" << pts(lab.score())
      << " / " << pts(lab.max_score()) << "</span></div>";
    if (!lab.error.empty()) s << "<div class='err'>" << esc(lab.error) << "</div>";
    if (!lab.compile_problem().empty())
      s << "<div class='err'><b>" << esc(lab.compile_problem())
        << ".</b> First compiler errors:</div><pre>" << esc(lab.build_errors) << "</pre>";
    if (!lab.open_todos.empty()) {
      s << "<div class='warn'><b>Still marked TODO(lab" << esc(lab.lab) << "):</b><br>";
      for (const auto& t : lab.open_todos) s << "<code>" << esc(t) << "</code><br>";
      s << "</div>";
    }
    s << "<table><tr><th>Check</th><th>Points</th><th>Status</th><th>Why</th></tr>";
    for (const auto& c : lab.checks) {
      s << "<tr><td class='name'><b>" << esc(c.name) << "</b><div class='note'>"
        << to_string(c.kind) << (c.requires_gpu ? " &middot; gpu" : "")
        << (c.hidden ? " &middot; hidden" : "") << "</div></td>";
      if (c.stretch())
        s << "<td class='pts'>stretch, not graded</td>";
      else
        s << "<td class='pts'>"
          << (c.status == Status::kSkipped ? std::string("&ndash;") : pts(c.score)) << " / "
          << pts(c.max_score) << "</td>";
      // A stretch step's pass/fail in a neutral colour: it costs nothing, so it is no red failure.
      s << "<td><span class='badge " << (c.stretch() ? "stretch" : to_string(c.status)) << "'>"
        << (c.stretch() ? "stretch: " : "") << to_string(c.status) << "</span></td><td>"
        << esc(c.reason);
      if (c.figure && c.threshold) s << "<br>" << figure_svg(c);
      if (!c.tests.empty()) {
        s << "<details><summary>" << c.tests.size() << " tests</summary><table>";
        for (const auto& t : c.tests) {
          const std::string cls = t.outcome == TestOutcome::kPassed    ? "passed"
                                  : t.outcome == TestOutcome::kSkipped ? "skipped"
                                                                       : "failed";
          s << "<tr><td><code>" << esc(t.name) << "</code></td><td><span class='badge " << cls
            << "'>" << to_string(t.outcome) << "</span></td></tr>";
        }
        s << "</table></details>";
      }
      if (!c.details.empty())
        s << "<details" << (c.status == Status::kPassed || c.stretch() ? "" : " open")
          << "><summary>details</summary><pre>" << esc(group_repeated_failures(c.details))
          << "</pre></details>";
      s << "</td></tr>";
    }
    s << "</table>";
    if (lab.skipped_points() > 0)
      s << "<p class='note'>" << pts(lab.skipped_points())
        << " points of this lab were not graded here.</p>";
    s << "</section>";
  }
  const std::string next = next_step_line(r);
  if (!next.empty()) s << "<div class='next'>" << esc(next) << "</div>";
  s << "</main></body></html>\n";
  return s.str();
}

}  // namespace gtl::grader
