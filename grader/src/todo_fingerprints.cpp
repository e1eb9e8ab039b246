// The fingerprints of a lab's pristine TODO regions (todo_fingerprints.h).
#include "todo_fingerprints.h"

#include <cstdio>
#include <sstream>

#include "files.h"
#include "twin_check.h"

namespace gtl::grader {
namespace {

namespace fs = std::filesystem;

std::string hex(std::uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string regenerate_command(const fs::path& course, const Rubric& lab) {
  return "gtl-grade rubric-table --lab " + lab.lab + " --write --course " + course.string();
}

}  // namespace

std::uint64_t fnv1a64(const std::string& text) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::vector<RegionFingerprint> region_fingerprints(const std::string& text, const std::string& lab,
                                                   const std::string& file) {
  const RegionScan scan = scan_todo_regions(text, lab);
  if (!scan.error.empty()) return {};
  const std::vector<std::string> lines = split_lines(text);
  std::vector<RegionFingerprint> out;
  for (const TodoRegion& r : scan.regions) {
    std::string region;
    for (int n = r.begin_line; n <= r.end_line; ++n)
      region += lines[static_cast<std::size_t>(n - 1)] + "\n";
    out.push_back({file, r.id, fnv1a64(region)});
  }
  return out;
}

fs::path todo_fingerprints_path(const fs::path& course, const Rubric& lab) {
  return course / "labs" / lab.dir / "todo_fingerprints.txt";
}

std::string todo_fingerprints_text(const fs::path& course, const Rubric& lab) {
  std::string s = "# Generated from starter/" + lab.dir + " by `gtl-grade rubric-table --lab " +
                  lab.lab + " --write`: do not edit.\n" +
                  "# One pristine TODO region a line: student file, region id, 64-bit FNV-1a of "
                  "its lines (markers included, each ending in a newline).\n";
  for (const auto& f : lab.student_files) {
    const fs::path p = course / "starter" / lab.dir / f;
    if (!fs::is_regular_file(p)) continue;
    for (const auto& r : region_fingerprints(read_file(p), lab.lab, f))
      s += r.file + " " + r.id + " " + hex(r.hash) + "\n";
  }
  return s;
}

std::optional<std::vector<RegionFingerprint>> recorded_fingerprints(const fs::path& course,
                                                                    const Rubric& lab) {
  const fs::path p = todo_fingerprints_path(course, lab);
  if (!fs::is_regular_file(p)) return std::nullopt;
  std::vector<RegionFingerprint> out;
  const std::vector<std::string> lines = split_lines(read_file(p));
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].empty() || lines[i][0] == '#') continue;
    std::istringstream in(lines[i]);
    RegionFingerprint r;
    std::string h, rest;
    if (!(in >> r.file >> r.id >> h) || (in >> rest) || h.size() != 16 ||
        h.find_first_not_of("0123456789abcdef") != std::string::npos)
      throw RubricError(p.string() + ":" + std::to_string(i + 1) +
                        ": expected `<file> <id> <16 hex digits>`, got `" + lines[i] + "`");
    r.hash = std::stoull(h, nullptr, 16);
    out.push_back(r);
  }
  return out;
}

std::string todo_fingerprints_problem(const fs::path& course, const Rubric& lab) {
  const fs::path p = todo_fingerprints_path(course, lab);
  const std::string name = "labs/" + lab.dir + "/todo_fingerprints.txt";
  if (!fs::is_regular_file(p))
    return "lab " + lab.lab + ": " + name +
           " is missing: the grader cannot tell a submission's open TODOs; generate it with: " +
           regenerate_command(course, lab);
  if (read_file(p) == todo_fingerprints_text(course, lab)) return "";
  return "lab " + lab.lab + ": " + name + " is stale: it is not the fingerprints of starter/" +
         lab.dir + "'s TODO regions; regenerate it with: " + regenerate_command(course, lab);
}

}  // namespace gtl::grader
