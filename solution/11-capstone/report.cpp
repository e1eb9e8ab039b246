// Lab 11, TODO 4: the report: the best plans as a table, one GPU's memory as a picture.
//
// A plan is only useful if someone can check it: the table shows what the search weighed the
// choice against, and the bar shows where the bytes go and how close to the limit they are.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "capstone.h"
#include "gtl/runtime/error.h"

namespace lab11 {

std::string plan_table(const Plan& plan, int rows) {
  GTL_CHECK(rows >= 1, "plan_table: " << rows << " rows (>= 1)");
  std::string out;
  // SOLUTION(lab11) step 4 (table)
  if (!plan.feasible) return "No configuration fits.\n";
  // The fitting candidates by speed, fastest first, then by memory, equals kept in the search's
  // order: each is on the front iff it holds less memory than every one before it, or exactly
  // as much as the last one kept at exactly its speed.
  std::vector<Candidate> fit;
  for (const Candidate& c : plan.candidates)
    if (c.fits) fit.push_back(c);
  std::stable_sort(fit.begin(), fit.end(), [](const Candidate& a, const Candidate& b) {
    return a.tokens_per_s > b.tokens_per_s ||
           (a.tokens_per_s == b.tokens_per_s && a.memory_bytes < b.memory_bytes);
  });
  std::vector<Candidate> front;
  for (const Candidate& c : fit)
    if (front.empty() || c.memory_bytes < front.back().memory_bytes ||
        (c.memory_bytes == front.back().memory_bytes &&
         c.tokens_per_s == front.back().tokens_per_s))
      front.push_back(c);
  out = "| # | configuration | memory (GiB) | tokens/s |\n|---|---|---|---|\n";
  for (std::size_t i = 0; i < std::min(front.size(), static_cast<std::size_t>(rows)); ++i) {
    char line[512];
    std::snprintf(line, sizeof line, "| %zu | %s | %.2f | %.0f |\n", i + 1,
                  describe(front[i].config).c_str(),
                  static_cast<double>(front[i].memory_bytes) / (1024.0 * 1024.0 * 1024.0),
                  front[i].tokens_per_s);
    out += line;
  }
  // END SOLUTION(lab11)
  return out;
}

std::string memory_svg(const MemoryBreakdown& memory, int64_t gpu_memory_bytes) {
  GTL_CHECK(gpu_memory_bytes >= 1 && memory.parameters >= 0 && memory.gradients >= 0 &&
                memory.optimizer >= 0 && memory.activations >= 0 && memory.other >= 0,
            "memory_svg: " << gpu_memory_bytes << " bytes a GPU, categories " << memory.parameters
                           << ", " << memory.gradients << ", " << memory.optimizer << ", "
                           << memory.activations << ", " << memory.other << " (all >= 0)");
  std::string out;
  // SOLUTION(lab11) step 4 (figure)
  const double scale =
      400.0 / static_cast<double>(std::max<int64_t>(memory.total(), gpu_memory_bytes));
  out = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"200\" height=\"440\">\n";
  struct Part {
    const char* name;
    int64_t bytes;
    const char* fill;
  };
  const Part parts[5] = {{"parameters", memory.parameters, "#4e79a7"},
                         {"gradients", memory.gradients, "#f28e2b"},
                         {"optimizer", memory.optimizer, "#e15759"},
                         {"activations", memory.activations, "#76b7b2"},
                         {"other", memory.other, "#59a14f"}};
  double below = 0;
  char line[256];
  for (const Part& part : parts) {
    const double h = scale * static_cast<double>(part.bytes);
    below += h;
    std::snprintf(line, sizeof line,
                  "<rect data-category=\"%s\" x=\"60\" y=\"%.2f\" width=\"80\" height=\"%.2f\" "
                  "fill=\"%s\"/>\n",
                  part.name, 420.0 - below, h, part.fill);
    out += line;
  }
  const double limit = 420.0 - scale * static_cast<double>(gpu_memory_bytes);
  std::snprintf(line, sizeof line,
                "<line data-limit=\"gpu\" x1=\"40\" x2=\"160\" y1=\"%.2f\" y2=\"%.2f\" "
                "stroke=\"black\"/>\n",
                limit, limit);
  out += line;
  out += "</svg>\n";
  // END SOLUTION(lab11)
  return out;
}

}  // namespace lab11
