// lab04_timeline: records two training steps of the lab model with your MemoryTimeline (TODO 3),
// prints its summary, writes the JSON and draws it as an SVG beside it (out.json -> out.svg).
//
//   lab04_timeline [out.json] [batch] [hidden]   (defaults: memory_timeline.json 64 64)
//
// Two steps, because AdamW's moments arrive in the first and the second step's backward (with
// them) is where a steady training run peaks.
#include <cstdlib>
#include <fstream>
#include <iostream>

#include "memory_lab.h"
#include "timeline_svg.h"

int main(int argc, char** argv) {
  const std::string out = argc > 1 ? argv[1] : "memory_timeline.json";
  lab04::ModelConfig config;
  const int64_t batch = argc > 2 ? std::atoll(argv[2]) : 64;
  if (argc > 3) config.hidden = std::atoll(argv[3]);
  try {
    lab04::MemoryTimeline timeline;
    const lab04::RecordedRun run = lab04::record_training_step(config, batch, 2, timeline);
    nlohmann::json j = timeline.to_json();
    j["config"] = {{"batch", batch},
                   {"hidden", config.hidden},
                   {"blocks", config.blocks},
                   {"steps", 2},
                   {"measured_peak", run.measured_peak}};
    std::ofstream(out) << j.dump(1) << "\n";
    const std::string svg =
        (out.size() > 5 && out.substr(out.size() - 5) == ".json" ? out.substr(0, out.size() - 5)
                                                                 : out) +
        ".svg";
    std::ofstream(svg) << lab04::memory_timeline_svg(
        timeline.events(), "Memory of two training steps: lab model, batch " +
                               std::to_string(batch) + ", hidden " + std::to_string(config.hidden));
    std::cout << timeline.summary() << "measured peak (allocator statistics): " << run.measured_peak
              << " bytes\nwrote " << out << " and " << svg << "\n";
  } catch (const std::exception& e) {
    std::cerr << "lab04_timeline: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
