// Forbidden includes of student objects (see include_check.h).
#include "include_check.h"

#include <algorithm>
#include <sstream>

#include "process.h"

namespace gtl::grader {
namespace {

namespace fs = std::filesystem;

// True when `path` lies inside `dir` (both absolute and normal).
bool inside(const fs::path& path, const fs::path& dir) {
  const fs::path rel = path.lexically_relative(dir);
  return !rel.empty() && *rel.begin() != "..";
}

fs::path absolute_normal(const fs::path& p, const fs::path& base) {
  return (p.is_absolute() ? p : base / p).lexically_normal();
}

}  // namespace

std::vector<fs::path> dependency_roots(const std::vector<std::string>& cmake_args,
                                       const fs::path& course, const fs::path& work) {
  const fs::path root = fs::absolute(course).lexically_normal();
  const fs::path grading = fs::absolute(work).lexically_normal();
  std::vector<fs::path> out;
  for (const std::string& arg : cmake_args) {
    if (arg.rfind("-D", 0) != 0) continue;
    const auto eq = arg.find('=');
    if (eq == std::string::npos) continue;
    std::string name = arg.substr(2, eq - 2);
    if (const auto colon = name.find(':'); colon != std::string::npos) name.resize(colon);
    const bool wanted = name == "CMAKE_PREFIX_PATH" || name == "CMAKE_INCLUDE_PATH" ||
                        (name.rfind("GTL_", 0) == 0 && name.size() > 12 &&
                         name.compare(name.size() - 8, 8, "_INCLUDE") == 0);
    if (!wanted) continue;
    std::istringstream list(arg.substr(eq + 1));
    for (std::string item; std::getline(list, item, ';');) {
      if (item.empty()) continue;
      const fs::path dir = absolute_normal(item, root);
      const bool unsafe = dir == dir.root_path() || inside(root, dir) || root == dir ||
                          inside(grading, dir) || grading == dir || inside(dir, grading) ||
                          inside(dir, root / "labs") || inside(dir, root / "solution") ||
                          inside(dir, root / "starter");
      if (!unsafe && std::find(out.begin(), out.end(), dir) == out.end()) out.push_back(dir);
    }
  }
  return out;
}

std::string describe_forbidden(const std::vector<ForbiddenInclude>& found, std::size_t shown) {
  std::string list;
  for (std::size_t i = 0; i < found.size() && i < shown; ++i)
    list += (list.empty() ? "" : "; ") + found[i].object + " includes " + found[i].included;
  if (found.size() > shown) list += "; and " + std::to_string(found.size() - shown) + " more";
  return list;
}

std::vector<std::pair<std::string, std::vector<std::string>>> parse_ninja_deps(
    const std::string& text) {
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    if (line[0] != ' ') {
      const auto colon = line.find(": #deps");
      if (colon != std::string::npos) out.push_back({line.substr(0, colon), {}});
    } else if (!out.empty()) {
      out.back().second.push_back(line.substr(line.find_first_not_of(' ')));
    }
  }
  return out;
}

std::vector<ForbiddenInclude> forbidden_includes(const fs::path& build_dir, const fs::path& impl,
                                                 const fs::path& course, const Rubric& lab,
                                                 const std::vector<fs::path>& dependencies) {
  RunLimits limits;
  limits.timeout_s = 60;
  limits.output_bytes = 64 << 20;
  const RunResult r = run_process({"ninja", "-C", build_dir.string(), "-t", "deps"}, limits);
  std::vector<ForbiddenInclude> out;
  if (!r.ok()) return out;
  const fs::path build = fs::absolute(build_dir).lexically_normal();
  const fs::path student = fs::absolute(impl / lab.dir).lexically_normal();
  const fs::path all_students = fs::absolute(impl).lexically_normal();
  const fs::path root = fs::absolute(course).lexically_normal();
  const fs::path lab_dir = root / "labs" / lab.dir;
  auto allowed = [&](const fs::path& dep) {
    if (inside(dep, all_students)) return true;
    if (inside(dep, lab_dir)) {
      const std::string sub = dep.lexically_relative(lab_dir).begin()->string();
      return sub != "tests" && sub != "bench" && sub != "hidden";
    }
    if (inside(dep, root / "common")) return true;
    // The grader's channel headers (the core's reference guard, the seed): public, no answers.
    if (inside(dep, root / "grader" / "channel")) return true;
    if (inside(dep, fs::path(GTL_GRADER_CHANNEL_DIR).lexically_normal())) return true;
    if (inside(dep, build)) return true;  // generated files, emulated copies of student files
    for (const fs::path& d : dependencies)
      if (inside(dep, d)) return true;
    return inside(dep, "/usr") || inside(dep, "/opt");
  };
  for (const auto& [object, deps] : parse_ninja_deps(r.output)) {
    if (deps.empty()) continue;
    const fs::path source = absolute_normal(deps.front(), build);
    // A student object: compiled from the student's folder, or from the copy of a student file
    // the emulated build makes in the build folder.
    const bool from_student = inside(source, student);
    const bool copy_of_student =
        inside(source, build) && std::find(lab.student_files.begin(), lab.student_files.end(),
                                           source.filename().string()) != lab.student_files.end();
    if (!from_student && !copy_of_student) continue;
    const std::string name = lab.dir + "/" + source.filename().string();
    for (const auto& d : deps) {
      const fs::path dep = absolute_normal(d, build);
      if (allowed(dep)) continue;
      const std::string shown =
          inside(dep, root) ? dep.lexically_relative(root).string() : dep.string();
      if (std::none_of(out.begin(), out.end(), [&](const ForbiddenInclude& f) {
            return f.object == name && f.included == shown;
          }))
        out.push_back({name, shown});
    }
  }
  return out;
}

}  // namespace gtl::grader
