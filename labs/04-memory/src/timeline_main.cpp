// lab04_timeline: records two training steps of the lab model with your MemoryTimeline (TODO 3),
// prints its summary and writes the JSON the report plots.
//
//   lab04_timeline [out.json] [batch] [hidden]   (defaults: memory_timeline.json 64 64)
//
// Two steps, because AdamW's moments arrive in the first and the second step's backward (with
// them) is where a steady training run peaks.
#include <cstdlib>
#include <fstream>
#include <iostream>

#include "memory_lab.h"

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
    std::cout << timeline.summary() << "measured peak (allocator statistics): " << run.measured_peak
              << " bytes\nwrote " << out << "\n";
  } catch (const std::exception& e) {
    std::cerr << "lab04_timeline: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
