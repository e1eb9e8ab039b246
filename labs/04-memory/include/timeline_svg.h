// The memory timeline as a picture: one SVG, bytes live after every event, stacked by category
// (weights at the bottom, then gradients, optimizer state, batch, activations, temporaries), the
// peak marked. lab04_timeline writes it beside the JSON; labs/04-memory/figures has the
// solution's. Provided, not a TODO: it draws whatever events your MemoryTimeline recorded.
#pragma once

#include <string>
#include <vector>

#include "memory_lab.h"

namespace lab04 {

// A self-contained SVG document (no scripts, no external fonts) titled `title`.
std::string memory_timeline_svg(const std::vector<TimelineEvent>& events, const std::string& title);

}  // namespace lab04
