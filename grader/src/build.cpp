// Private starter-shaped folder, configure, build, compiler-error trimming.
#include "build.h"
#include "files.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>

namespace gtl::grader {
namespace {

namespace fs = std::filesystem;

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// ninja's "[12/97] Building ..." and CMake's "-- Found ...": the lines that say a step moves.
bool is_progress_line(const std::string& text) {
  if (text.rfind("-- ", 0) == 0) return true;
  if (text.size() < 5 || text[0] != '[') return false;
  const auto slash = text.find('/'), close = text.find(']');
  return slash != std::string::npos && close != std::string::npos && slash < close &&
         std::isdigit(static_cast<unsigned char>(text[1]));
}

}  // namespace

std::string elapsed_text(double seconds) {
  const long s = seconds > 0 ? static_cast<long>(seconds) : 0;
  char buf[32];
  if (s < 60)
    std::snprintf(buf, sizeof buf, "%lds", s);
  else if (s < 3600)
    std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, s % 3600 / 60);
  return buf;
}

ProgressThrottle::ProgressThrottle(std::string what, Sink sink, double interval_s, Clock clock)
    : what_(std::move(what)),
      sink_(std::move(sink)),
      interval_s_(interval_s),
      clock_(clock ? std::move(clock) : Clock(steady_seconds)) {
  start_ = clock_();
  last_shown_ = start_;
}

void ProgressThrottle::line(const std::string& text) {
  if (!sink_ || !is_progress_line(text)) return;
  const double now = clock_();
  if (now - last_shown_ < interval_s_) return;
  last_shown_ = now;
  shown_any_ = true;
  const std::string shown = text.size() > 100 ? text.substr(0, 97) + "..." : text;
  sink_(what_ + ": " + shown + " (" + elapsed_text(now - start_) + ")");
}

void ProgressThrottle::finish(const std::string& how) {
  if (sink_) sink_(what_ + ": " + how + " (" + elapsed_text(clock_() - start_) + ")");
}

fs::path resolve_submission(const fs::path& submission) {
  if (fs::is_directory(submission / "starter") && fs::is_directory(submission / "labs"))
    return submission / "starter";
  return submission;
}

std::vector<std::string> missing_files(const fs::path& submission, const Rubric& lab) {
  std::vector<std::string> missing;
  for (const auto& f : lab.student_files) {
    std::error_code ec;  // lstat: a link is not a file of the submission (grade.cpp refuses it)
    if (!fs::is_regular_file(fs::symlink_status(submission / lab.dir / f, ec)))
      missing.push_back(lab.dir + "/" + f);
  }
  return missing;
}

std::vector<std::string> open_todos(const fs::path& submission, const Rubric& lab) {
  std::vector<std::string> out;
  const std::string marker = "TODO(lab" + lab.lab + ")";
  for (const auto& f : lab.student_files) {
    std::ifstream in(submission / lab.dir / f);
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      if (line.find(marker) == std::string::npos) continue;
      const auto b = line.find_first_not_of(" \t");
      out.push_back(lab.dir + "/" + f + ":" + std::to_string(n) + ": " +
                    line.substr(b == std::string::npos ? 0 : b, 160));
    }
  }
  return out;
}

namespace {

// Writes `content` to `to` when it differs, never through a link at `to` or beside it.
bool sync_content(const std::string& content, const fs::path& to) {
  if (read_file_nofollow(to) == content) return false;
  fs::create_directories(to.parent_path());
  write_file_nofollow(to, content);
  return true;
}

}  // namespace

bool sync_file(const fs::path& from, const fs::path& to) {
  return sync_content(read_file(from), to);
}

void prepare_impl(const fs::path& course, const fs::path& submission,
                  const std::vector<const Rubric*>& labs, const fs::path& impl) {
  fs::create_directories(impl);
  const fs::path starter = course / "starter";
  // Pristine starter everywhere first; a file missing from it is a course error.
  std::vector<std::string> wanted;
  if (fs::is_directory(starter)) {
    for (const auto& e : fs::recursive_directory_iterator(starter)) {
      if (!e.is_regular_file()) continue;
      const fs::path rel = fs::relative(e.path(), starter);
      wanted.push_back(rel.string());
      sync_file(e.path(), impl / rel);
    }
  }
  // A student file is read one component at a time without following a link (grade.cpp has
  // refused a submission holding one; this holds even if one appeared since).
  for (const Rubric* lab : labs)
    for (const auto& f : lab->student_files)
      if (const auto content = read_file_beneath(submission, fs::path(lab->dir) / f))
        sync_content(*content, impl / lab->dir / f);
  // Files of an earlier submission that the starter does not have must not linger.
  std::vector<fs::path> stale;
  for (const auto& e : fs::recursive_directory_iterator(impl)) {
    if (!e.is_regular_file()) continue;
    const std::string rel = fs::relative(e.path(), impl).string();
    if (std::find(wanted.begin(), wanted.end(), rel) == wanted.end()) stale.push_back(e.path());
  }
  for (const auto& p : stale) fs::remove(p);
}

fs::path prebuilt_core_dir(const std::vector<std::string>& cmake_args) {
  std::optional<fs::path> given;
  for (const auto& a : cmake_args) {
    if (a.rfind("-DGTL_PREBUILT_CORE", 0) != 0) continue;
    const auto eq = a.find('=');
    const std::string name = a.substr(0, a.find_first_of(":=")).substr(2);
    if (name == "GTL_PREBUILT_CORE" && eq != std::string::npos) given = a.substr(eq + 1);
  }
  if (given) return given->empty() ? fs::path() : fs::absolute(*given);
  const fs::path own = GTL_GRADER_CORE_BUILD;
  std::error_code ec;
  return !own.empty() && fs::exists(own / "gtl-prebuilt-core" / "settings.cmake", ec) ? own
                                                                                      : fs::path();
}

void configure_course(const BuildSettings& s) {
  const fs::path build = s.work / "build";
  const fs::path impl = fs::absolute(s.work / "impl");
  const fs::path stamp = build / "gtl-grade-configured";
  std::string args_line =
      "course=" + fs::absolute(s.course).string() + "\nchannel=" GTL_GRADER_CHANNEL_DIR;
  for (const auto& a : s.cmake_args) args_line += "\n" + a;
  const fs::path core = prebuilt_core_dir(s.cmake_args);
  args_line += "\nprebuilt core=" + core.string();
  if (fs::exists(build / "build.ninja") && fs::exists(build / "compile_commands.json") &&
      fs::exists(stamp) && read_file(stamp) == args_line)
    return;
  if (!program_available("cmake"))
    throw GradeError(exit_codes::kEnvironment, "cmake is not installed (apt-get install cmake)");
  if (!program_available("ninja"))
    throw GradeError(exit_codes::kEnvironment,
                     "ninja is not installed (apt-get install ninja-build)");
  if (s.progress) s.progress("configuring the course in " + build.string());
  std::vector<std::string> argv = {
      "cmake", "-S", fs::absolute(s.course).string(), "-B", build.string(), "-G", "Ninja",
      "-DCMAKE_BUILD_TYPE=Release", "-DGTL_LABS_IMPL=" + impl.string(), "-DGTL_WERROR=OFF",
      "-DGTL_GRADER_CHANNEL_DIR=" GTL_GRADER_CHANNEL_DIR,
      // forbidden_symbols.cpp recompiles student files from it
      "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON", "-DGTL_PREBUILT_CORE=" + core.string()};
  argv.insert(argv.end(), s.cmake_args.begin(), s.cmake_args.end());
  RunLimits limits;
  limits.timeout_s = 600;
  limits.output_bytes = 256 * 1024;
  ProgressThrottle shown("configuring", s.progress);
  const RunResult r = run_process(argv, limits, {}, [&](const std::string& l) { shown.line(l); },
                                  {{}, false, s.sandbox});
  shown.finish(r.ok() ? "done" : "failed");
  if (!r.ok()) {
    throw GradeError(exit_codes::kEnvironment, "configuring the course failed (" +
                                                   r.describe(limits.timeout_s) + "):\n" +
                                                   first_errors(r.output, 40));
  }
  std::ofstream(stamp) << args_line;
}

BuildOutcome build_targets(const BuildSettings& s, const std::vector<std::string>& targets,
                           double timeout_s) {
  std::vector<std::string> argv = {"cmake", "--build", (s.work / "build").string(), "--target"};
  argv.insert(argv.end(), targets.begin(), targets.end());
  RunLimits limits;
  limits.timeout_s = timeout_s;
  limits.output_bytes = 256 * 1024;
  std::string names;
  for (const auto& t : targets) names += (names.empty() ? "" : " ") + t;
  ProgressThrottle shown("building " + names, s.progress);
  const RunResult r = run_process(argv, limits, {}, [&](const std::string& l) { shown.line(l); },
                                  {{}, false, s.sandbox});
  shown.finish(r.ok() ? "done" : "failed");
  BuildOutcome out;
  out.ok = r.ok();
  out.log = r.output;
  if (!out.ok) {
    out.errors = first_errors(r.output);
    if (out.errors.empty()) out.errors = "the build " + r.describe(timeout_s);
  }
  return out;
}

BuildOutcome build_each_target(const BuildSettings& s, const std::vector<std::string>& targets,
                               double timeout_s,
                               const std::function<void(const std::string&)>& progress) {
  BuildOutcome all = build_targets(s, targets, timeout_s);
  if (all.ok || targets.size() < 2) {
    if (!all.ok) all.failed = targets;
    return all;
  }
  // Ninja stops at the first failed step, so the failed call says neither which targets are
  // broken nor whether the others would build. Targets it did build are up to date now, so
  // these calls only redo what is left (a broken shared library fails again, quickly).
  if (progress) progress("the build failed: building each target on its own");
  BuildOutcome out;
  out.ok = true;
  for (const auto& t : targets) {
    BuildOutcome one = build_targets(s, {t}, timeout_s);
    out.log += one.log;
    if (one.ok) continue;
    out.ok = false;
    out.failed.push_back(t);
    if (out.errors.empty()) out.errors = one.errors;
  }
  return out;
}

std::string first_errors(const std::string& log, std::size_t max_lines) {
  std::istringstream in(log);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  // The first compiler diagnostic ("file:line:col: error: ..."), else the first failed step.
  std::size_t start = lines.size();
  for (const char* marker : {"error:", "error :", "Error", "FAILED:"}) {
    for (std::size_t i = 0; i < lines.size() && start == lines.size(); ++i)
      if (lines[i].find(marker) != std::string::npos) start = i;
    if (start != lines.size()) break;
  }
  if (start == lines.size()) return "";
  // Include the "In function ..." context line that gcc prints just before the first error.
  if (start > 0 && lines[start - 1].find("In ") != std::string::npos) --start;
  std::string out;
  for (std::size_t i = start, n = 0; i < lines.size() && n < max_lines; ++i) {
    const std::string& l = lines[i];
    if (l.rfind("[", 0) == 0 && l.find("Building") != std::string::npos) continue;  // ninja noise
    if (l.rfind("ninja: build stopped", 0) == 0) continue;
    if (l.size() > 300 && l.find(" -c ") != std::string::npos) continue;  // a compiler command line
    out += (l.size() > 200 ? l.substr(0, 200) + " ..." : l) + "\n";
    ++n;
  }
  return out;
}

fs::path find_executable(const fs::path& build_dir, const std::string& target) {
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(build_dir, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    if (it->is_directory() && it->path().filename() == "CMakeFiles") {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file() && it->path().filename() == target &&
        (fs::status(it->path()).permissions() & fs::perms::owner_exec) != fs::perms::none)
      return it->path();
  }
  return build_dir / target;  // not built: callers report "was not built"
}

bool build_has_cuda(const fs::path& build_dir) {
  std::ifstream in(build_dir / "CMakeCache.txt");
  bool cuda_off = false, compiler = false;
  for (std::string line; std::getline(in, line);) {
    const auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = line.substr(0, line.find(':')), value = line.substr(eq + 1);
    if (key == "GTL_CUDA") cuda_off = value == "OFF";
    if (key == "CMAKE_CUDA_COMPILER")
      compiler = !value.empty() && value.find("NOTFOUND") == std::string::npos;
  }
  return compiler && !cuda_off;
}

bool gpu_available() {
  if (fs::exists("/dev/nvidia0")) return true;
  std::error_code ec;
  const fs::path gpus = "/proc/driver/nvidia/gpus";
  return fs::is_directory(gpus, ec) && fs::directory_iterator(gpus, ec) != fs::directory_iterator();
}

}  // namespace gtl::grader
