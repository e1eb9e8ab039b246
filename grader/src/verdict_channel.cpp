// Parsing the verdict channel's records (see verdict_channel.h).
#include "verdict_channel.h"

#include <fstream>
#include <sstream>

namespace gtl::grader {

Verdicts parse_verdicts(const std::string& channel, const std::string& key) {
  Verdicts v;
  std::istringstream in(channel);
  auto forged = [&](const std::string& line) {
    if (!v.forged) v.forged_line = line.substr(0, 200);
    v.forged = true;
  };
  for (std::string line; std::getline(in, line);) {
    if (key.empty() || line.compare(0, key.size() + 1, key + " ") != 0) {
      forged(line);
      continue;
    }
    const std::string rest = line.substr(key.size() + 1);
    const auto space = rest.find(' ');
    const std::string event = rest.substr(0, space);
    const std::string test = space == std::string::npos ? "" : rest.substr(space + 1);
    if (event == "hello") {
      v.hello = test == kVerdictMarker;
      if (!v.hello) forged(line);
    } else if (event == "seed" && !test.empty()) {
      v.seed = test;
    } else if (event == "plan" && !test.empty()) {
      v.plan.push_back(test);
    } else if (event == "run" && !test.empty()) {
      v.running = test;
    } else if ((event == "passed" || event == "failed" || event == "skipped") && !test.empty()) {
      // A second outcome for one test is not something GoogleTest sends.
      if (v.outcomes.count(test) || test != v.running) forged(line);
      v.outcomes[test] = event;
      v.running.clear();
    } else if (event == "end" && test.empty()) {
      v.ended = true;
    } else {
      forged(line);
    }
  }
  if (!channel.empty() && channel.back() != '\n') forged("(a record cut short)");
  return v;
}

bool has_verdict_listener(const std::filesystem::path& binary) {
  std::ifstream in(binary, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str().find(kVerdictMarker) != std::string::npos;
}

}  // namespace gtl::grader
