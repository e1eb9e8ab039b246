// The twin check and the open TODO regions (twin_check.h).
#include "twin_check.h"
#include "files.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include "build.h"
#include "todo_fingerprints.h"

namespace gtl::grader {
namespace {

namespace fs = std::filesystem;

// A marker is a `//` comment on a line of its own: `throw Error("TODO(lab01) step 1a: ...")` in
// a starter's body is code, not a marker.
bool is_comment_line(const std::string& line) {
  const auto b = line.find_first_not_of(" \t");
  return b != std::string::npos && line.compare(b, 2, "//") == 0;
}

// The starter marks its regions TODO(labNN), the solution the same lines SOLUTION(labNN): a
// solution holds no TODO markers, and the twins still pair region by region.
constexpr const char* kMarkerKinds[] = {"TODO", "SOLUTION"};

std::string begin_marker(const std::string& lab, const char* kind = "TODO") {
  return std::string(kind) + "(lab" + lab + ") step ";
}
std::string end_marker(const std::string& lab, const char* kind = "TODO") {
  return "END " + std::string(kind) + "(lab" + lab + ")";
}

bool is_end_marker(const std::string& line, const std::string& lab) {
  for (const char* kind : kMarkerKinds)
    if (line.find(end_marker(lab, kind)) != std::string::npos) return true;
  return false;
}

// Where the region id starts on a begin-marker line, or npos.
std::size_t begin_marker_end(const std::string& line, const std::string& lab) {
  for (const char* kind : kMarkerKinds) {
    const std::string marker = begin_marker(lab, kind);
    if (const auto at = line.find(marker); at != std::string::npos) return at + marker.size();
  }
  return std::string::npos;
}

// "1a" from "// TODO(lab01) step 1a: spec..." (the id ends at ':', a blank or the line's end).
std::string region_id(const std::string& line, std::size_t marker_end) {
  const auto end = line.find_first_of(": \t", marker_end);
  return line.substr(marker_end, end == std::string::npos ? std::string::npos : end - marker_end);
}

std::string trimmed(const std::string& line, std::size_t max = 100) {
  const auto b = line.find_first_not_of(" \t");
  return b == std::string::npos ? "" : line.substr(b, max);
}

// The lines outside the regions, as segments: segment k lies between region k-1 and region k.
struct Segment {
  int first_line = 1;  // 1-based line number of lines[0]
  std::vector<std::string> lines;
};

std::vector<Segment> outside_segments(const std::vector<std::string>& lines,
                                      const std::vector<TodoRegion>& regions) {
  std::vector<Segment> segments;
  int next = 1;
  auto take = [&](int up_to) {  // lines [next, up_to)
    Segment s;
    s.first_line = next;
    for (int n = next; n < up_to; ++n) s.lines.push_back(lines[static_cast<std::size_t>(n - 1)]);
    segments.push_back(std::move(s));
  };
  for (const TodoRegion& r : regions) {
    take(r.begin_line);
    next = r.end_line + 1;
  }
  take(static_cast<int>(lines.size()) + 1);
  return segments;
}

// "starter/x.cu:12: `text`", or what stands there instead of a line outside the regions.
std::string at(const std::string& name, int line, const std::vector<std::string>& lines,
               const std::string& instead) {
  if (line > static_cast<int>(lines.size()))
    return name + ":" + std::to_string(line) + ": (" + instead + ")";
  return name + ":" + std::to_string(line) + ": `" +
         trimmed(lines[static_cast<std::size_t>(line - 1)]) + "`";
}

// Whether a rubric TODO id names a region: "3" names "3", "3a", "3b", not "30".
bool todo_names_region(const std::string& todo, const std::string& region) {
  if (region.compare(0, todo.size(), todo) != 0) return false;
  return region.size() == todo.size() ||
         !std::isdigit(static_cast<unsigned char>(region[todo.size()]));
}

}  // namespace

RegionScan scan_todo_regions(const std::string& text, const std::string& lab) {
  RegionScan scan;
  const std::string begin = begin_marker(lab), end = end_marker(lab);
  const std::vector<std::string> lines = split_lines(text);
  bool open = false;
  for (int n = 1; n <= static_cast<int>(lines.size()); ++n) {
    const std::string& line = lines[static_cast<std::size_t>(n - 1)];
    if (!is_comment_line(line)) continue;
    if (is_end_marker(line, lab)) {
      if (!open) {
        scan.error = "line " + std::to_string(n) + ": " + end + " without a " + begin +
                     "<id> line before it";
        return scan;
      }
      scan.regions.back().end_line = n;
      open = false;
    } else if (const auto id_at = begin_marker_end(line, lab); id_at != std::string::npos) {
      if (open) {
        scan.error = "line " + std::to_string(scan.regions.back().begin_line) + ": step " +
                     scan.regions.back().id + " has no " + end + " before the next step at line " +
                     std::to_string(n);
        return scan;
      }
      TodoRegion r;
      r.id = region_id(line, id_at);
      r.begin_line = n;
      if (r.id.empty()) {
        scan.error = "line " + std::to_string(n) + ": " + begin + "without an id";
        return scan;
      }
      scan.regions.push_back(r);
      open = true;
    }
  }
  if (open)
    scan.error = "line " + std::to_string(scan.regions.back().begin_line) + ": step " +
                 scan.regions.back().id + " has no " + end + " before the end of the file";
  return scan;
}

std::string compare_twins(const std::string& starter, const std::string& solution,
                          const std::string& lab, const std::string& starter_name,
                          const std::string& solution_name) {
  const RegionScan a = scan_todo_regions(starter, lab), b = scan_todo_regions(solution, lab);
  if (!a.error.empty()) return starter_name + ": " + a.error;
  if (!b.error.empty()) return solution_name + ": " + b.error;
  const std::size_t common = std::min(a.regions.size(), b.regions.size());
  for (std::size_t i = 0; i < common; ++i) {
    if (a.regions[i].id == b.regions[i].id) continue;
    return "the twins' TODO regions differ: region " + std::to_string(i + 1) + " is step " +
           a.regions[i].id + " at " + starter_name + ":" + std::to_string(a.regions[i].begin_line) +
           " but step " + b.regions[i].id + " at " + solution_name + ":" +
           std::to_string(b.regions[i].begin_line);
  }
  if (a.regions.size() != b.regions.size()) {
    const bool starter_more = a.regions.size() > b.regions.size();
    const TodoRegion& extra = (starter_more ? a : b).regions[common];
    return "the twins' TODO regions differ: " + starter_name + " has " +
           std::to_string(a.regions.size()) + ", " + solution_name + " " +
           std::to_string(b.regions.size()) + "; step " + extra.id + " at " +
           (starter_more ? starter_name : solution_name) + ":" + std::to_string(extra.begin_line) +
           " has no twin";
  }
  const std::vector<std::string> la = split_lines(starter), lb = split_lines(solution);
  const std::vector<Segment> sa = outside_segments(la, a.regions),
                             sb = outside_segments(lb, b.regions);
  for (std::size_t k = 0; k < sa.size(); ++k) {
    const std::size_t n = std::max(sa[k].lines.size(), sb[k].lines.size());
    for (std::size_t i = 0; i < n; ++i) {
      if (i < sa[k].lines.size() && i < sb[k].lines.size() && sa[k].lines[i] == sb[k].lines[i])
        continue;
      const std::string instead =
          k < a.regions.size() ? "the TODO region of step " + a.regions[k].id : "end of file";
      return "the twins differ outside the TODO regions: " +
             at(starter_name, sa[k].first_line + static_cast<int>(i),
                i < sa[k].lines.size() ? la : std::vector<std::string>{}, instead) +
             " vs " +
             at(solution_name, sb[k].first_line + static_cast<int>(i),
                i < sb[k].lines.size() ? lb : std::vector<std::string>{}, instead);
    }
  }
  return "";
}

std::vector<std::string> twin_problems(const fs::path& course, const Rubric& lab) {
  std::vector<std::string> problems;
  const std::set<std::string> listed(lab.student_files.begin(), lab.student_files.end());
  for (const char* tree : {"starter", "solution"}) {
    for (const auto& f : missing_files(course / tree, lab))
      problems.push_back(std::string(tree) + "/" + f + " is listed in the rubric but missing");
    const fs::path dir = course / tree / lab.dir;
    if (!fs::is_directory(dir)) continue;
    std::vector<std::string> extra;
    for (const auto& e : fs::recursive_directory_iterator(dir))
      if (e.is_regular_file() && !listed.count(fs::relative(e.path(), dir).generic_string()))
        extra.push_back(fs::relative(e.path(), dir).generic_string());
    std::sort(extra.begin(), extra.end());
    for (const auto& f : extra)
      problems.push_back(std::string(tree) + "/" + lab.dir + "/" + f +
                         " is not a student file of the rubric (student_files): a twin holds "
                         "only the files a submission may change");
  }
  for (const auto& f : lab.student_files) {
    const fs::path s = course / "starter" / lab.dir / f, t = course / "solution" / lab.dir / f;
    if (!fs::is_regular_file(s) || !fs::is_regular_file(t)) continue;
    const std::string why =
        compare_twins(read_file(s), read_file(t), lab.lab, "starter/" + lab.dir + "/" + f,
                      "solution/" + lab.dir + "/" + f);
    if (!why.empty()) problems.push_back("lab " + lab.lab + ": " + why);
  }
  for (const auto& todo : lab.todos) {
    const fs::path s = course / "starter" / lab.dir / todo.file;
    if (!fs::is_regular_file(s)) continue;
    const RegionScan scan = scan_todo_regions(read_file(s), lab.lab);
    const bool found = std::any_of(scan.regions.begin(), scan.regions.end(),
                                   [&](const auto& r) { return todo_names_region(todo.id, r.id); });
    if (!found)
      problems.push_back("lab " + lab.lab + " TODO '" + todo.id + "': starter/" + lab.dir + "/" +
                         todo.file + " has no TODO region " + begin_marker(lab.lab) + todo.id +
                         " ... " + end_marker(lab.lab));
  }
  return problems;
}

namespace {

// The pristine regions of one student file: the course's recorded fingerprints, or, for a lab
// without them, those of the course's starter/ (wrong when the submission is that starter/).
std::vector<RegionFingerprint> pristine_regions(
    const fs::path& course, const Rubric& lab, const std::string& file,
    const std::optional<std::vector<RegionFingerprint>>& recorded) {
  if (!recorded)
    return region_fingerprints(read_file(course / "starter" / lab.dir / file), lab.lab, file);
  std::vector<RegionFingerprint> out;
  for (const auto& r : *recorded)
    if (r.file == file) out.push_back(r);
  return out;
}

}  // namespace

std::vector<std::string> open_todo_regions(const fs::path& course, const fs::path& submission,
                                           const Rubric& lab) {
  const auto recorded = recorded_fingerprints(course, lab);
  std::vector<std::string> out;
  for (const auto& f : lab.student_files) {
    const std::string mine = read_file(submission / lab.dir / f);
    const RegionScan m = scan_todo_regions(mine, lab.lab);
    const std::vector<RegionFingerprint> have = region_fingerprints(mine, lab.lab, f),
                                         want = pristine_regions(course, lab, f, recorded);
    bool same_regions = m.error.empty() && !want.empty() && have.size() == want.size();
    for (std::size_t i = 0; same_regions && i < have.size(); ++i)
      same_regions = have[i].id == want[i].id;
    if (!same_regions) {  // no regions, or the student removed markers: every marked line
      Rubric one = lab;
      one.student_files = {f};
      for (auto& line : open_todos(submission, one)) out.push_back(line);
      continue;
    }
    const std::vector<std::string> lm = split_lines(mine);
    for (std::size_t i = 0; i < have.size(); ++i) {
      if (have[i].hash != want[i].hash) continue;  // edited in any way: started
      const int line = m.regions[i].begin_line;
      out.push_back(lab.dir + "/" + f + ":" + std::to_string(line) + ": " +
                    trimmed(lm[static_cast<std::size_t>(line - 1)], 160));
    }
  }
  return out;
}

}  // namespace gtl::grader
