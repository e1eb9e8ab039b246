// A simulated timeline (timeline.h) drawn as a picture: one self-contained SVG, two lanes per
// rank (its compute stream above its communication stream), one box per interval from its start
// to its end on a common time axis in microseconds, coloured by what it is: forward compute,
// backward compute, communication, idle waiting. Module spans (display only) and zero-length
// intervals are not drawn; the idle tail of a rank is.
//
//   write_timeline_svg(simulate_timeline(traces, model), "step.svg", "Bucketed DDP, 2 ranks");
//
// Why beside the Chrome trace: the trace is for exploring (ui.perfetto.dev: zoom, search, every
// interval's bytes); the SVG is the figure a handout shows, readable without a tool. Each box
// carries a <title> (its name and times) that a browser shows on hover. The output is a pure
// function of the timeline (fixed decimals), so a figure changes only when the step does.
#pragma once

#include <string>

#include "gtl/distributed/timeline.h"

namespace gtl::dist {

std::string timeline_svg(const Timeline& timeline, const std::string& title);
void write_timeline_svg(const Timeline& timeline, const std::string& path,
                        const std::string& title);

}  // namespace gtl::dist
