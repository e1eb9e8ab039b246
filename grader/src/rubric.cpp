// Strict rubric parsing with file:line messages (yaml-cpp's Mark gives 0-based lines).
#include "rubric.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

namespace gtl::grader {
namespace {

namespace fs = std::filesystem;

// Reads one YAML mapping and remembers which keys were consumed, so that a misspelt key
// ("pionts: 5") is an error instead of a silently ignored line.
class Reader {
 public:
  Reader(const YAML::Node& node, std::string where, const fs::path& file)
      : node_(node), where_(std::move(where)), file_(file) {
    if (!node_.IsMap()) fail(node_, where_ + ": expected a mapping of key: value");
  }

  [[noreturn]] void fail(const YAML::Node& at, const std::string& what) const {
    throw RubricError(file_.string() + ":" + std::to_string(line_of(at)) + ": " + what);
  }
  int line_of(const YAML::Node& at) const {
    const YAML::Mark m = at.Mark();
    return m.line >= 0 ? m.line + 1 : line_of_node();
  }
  int line_of_node() const { return node_.Mark().line + 1; }
  std::string key(const std::string& k) const { return where_.empty() ? k : where_ + "." + k; }

  YAML::Node get(const std::string& k, bool required) {
    used_.insert(k);
    YAML::Node v = node_[k];
    if (!v && required) fail(node_, "missing required field '" + key(k) + "'");
    return v;
  }

  std::string str(const std::string& k, bool required, std::string def = "") {
    YAML::Node v = get(k, required);
    if (!v) return def;
    if (!v.IsScalar()) fail(v, key(k) + ": expected a string");
    return v.as<std::string>();
  }

  double number(const std::string& k, bool required, double def, double min_value) {
    YAML::Node v = get(k, required);
    if (!v) return def;
    double x = 0;
    try {
      if (!v.IsScalar()) throw YAML::Exception(v.Mark(), "");
      x = v.as<double>();
    } catch (const YAML::Exception&) {
      fail(v, key(k) + ": expected a number, got '" + (v.IsScalar() ? v.Scalar() : "?") + "'");
    }
    if (!(x >= min_value)) fail(v, key(k) + ": must be >= " + fmt(min_value));
    return x;
  }

  std::optional<double> opt_number(const std::string& k, double min_value) {
    if (!node_[k]) {
      used_.insert(k);
      return std::nullopt;
    }
    return number(k, true, 0, min_value);
  }

  bool boolean(const std::string& k, bool def) {
    YAML::Node v = get(k, false);
    if (!v) return def;
    try {
      return v.as<bool>();
    } catch (const YAML::Exception&) {
      fail(v, key(k) + ": expected true or false");
    }
  }

  std::vector<std::string> strings(const std::string& k, bool required) {
    YAML::Node v = get(k, required);
    std::vector<std::string> out;
    if (!v) return out;
    if (v.IsScalar()) return {v.as<std::string>()};
    if (!v.IsSequence()) fail(v, key(k) + ": expected a list of strings");
    for (const auto& item : v) {
      if (!item.IsScalar()) fail(item, key(k) + ": expected a list of strings");
      out.push_back(item.as<std::string>());
    }
    return out;
  }

  // Every key that was not read is unknown: name it and the keys that are allowed.
  void finish() const {
    for (const auto& kv : node_) {
      const std::string k = kv.first.as<std::string>();
      if (!used_.count(k)) {
        std::string allowed;
        for (const auto& u : used_) allowed += (allowed.empty() ? "" : ", ") + u;
        fail(kv.first, "unknown field '" + key(k) + "' (allowed: " + allowed + ")");
      }
    }
  }

  static std::string fmt(double x) {
    std::ostringstream s;
    s << x;
    return s.str();
  }

 private:
  const YAML::Node node_;
  std::string where_;
  const fs::path& file_;
  std::set<std::string> used_;
};

Check parse_check(const YAML::Node& node, const std::string& where, const fs::path& file) {
  Reader r(node, where, file);
  Check c;
  c.line = r.line_of_node();
  c.name = r.str("name", true);
  const std::string type = r.str("type", true);
  c.points = r.number("points", true, 0, 0);
  c.binary = r.str("binary", true);
  const std::string req = r.str("requires", false, "cpu");
  if (req != "cpu" && req != "cuda" && req != "gpu")
    r.fail(node["requires"], where + ".requires: expected cpu, cuda or gpu");
  c.requires_gpu = req == "gpu";
  c.requires_cuda = req == "cuda";
  c.hidden = r.boolean("hidden", false);
  if (type == "test") {
    c.kind = CheckKind::kTest;
    c.tests = r.strings("tests", true);
    if (c.tests.empty()) r.fail(node, where + ".tests: list at least one test pattern");
    c.partial = r.boolean("partial", false);
    c.judge = r.str("judge", false);
  } else if (type == "speed") {
    c.kind = CheckKind::kSpeed;
    c.benchmark = r.str("benchmark", true);
    c.baseline = r.str("baseline", true);
    c.metric = r.str("metric", false, "real_time");
    if (c.metric != "real_time" && c.metric != "cpu_time")
      r.fail(node["metric"], where + ".metric: expected real_time or cpu_time");
    c.min_speedup = r.number("min_speedup", true, 0, 0);
    c.partial_from = r.opt_number("partial_from", 0);
    if (c.partial_from && *c.partial_from >= c.min_speedup)
      r.fail(node["partial_from"], where + ".partial_from: must be below min_speedup");
    // Timed on a CPU, the speedup depends on the machine (verify_rules.h): verify holds the
    // solution to this floor, so such a check must have one.
    if (!c.requires_gpu && !c.partial_from)
      r.fail(node, where + ": a speed check that runs without a GPU needs partial_from (the " +
                       "floor verify holds the solution to: a CPU timing depends on the machine)");
    c.min_fraction_of_solution = r.opt_number("min_fraction_of_solution", 0);
    c.partial_from_fraction = r.opt_number("partial_from_fraction", 0);
    if (c.partial_from_fraction && !c.min_fraction_of_solution)
      r.fail(node["partial_from_fraction"],
             where + ".partial_from_fraction: needs min_fraction_of_solution");
    if (c.partial_from_fraction && *c.partial_from_fraction >= *c.min_fraction_of_solution)
      r.fail(node["partial_from_fraction"],
             where + ".partial_from_fraction: must be below min_fraction_of_solution");
  } else if (type == "memory") {
    c.kind = CheckKind::kMemory;
    c.benchmark = r.str("benchmark", true);
    c.counter = r.str("counter", true);
    c.baseline = r.str("baseline", false);
    c.max_value = r.opt_number("max_value", 0);
    c.max_ratio = r.opt_number("max_ratio", 0);
    if (c.max_ratio.has_value() == c.baseline.empty() ||
        c.max_value.has_value() == c.max_ratio.has_value())
      r.fail(node, where + ": a memory check has either max_value, or baseline and max_ratio");
  } else {
    r.fail(node["type"], where + ".type: expected test, speed or memory, got '" + type + "'");
  }
  r.finish();
  return c;
}

Limits parse_limits(const YAML::Node& node, const fs::path& file) {
  Limits l;
  if (!node) return l;
  Reader r(node, "limits", file);
  l.test_timeout_s = r.number("test_timeout_s", false, l.test_timeout_s, 0.1);
  l.bench_timeout_s = r.number("bench_timeout_s", false, l.bench_timeout_s, 0.1);
  l.build_timeout_s = r.number("build_timeout_s", false, l.build_timeout_s, 1);
  l.memory_mb = r.number("memory_mb", false, l.memory_mb, 1);
  l.output_kb = static_cast<std::size_t>(r.number("output_kb", false, double(l.output_kb), 1));
  l.repetitions = static_cast<int>(r.number("repetitions", false, l.repetitions, 1));
  l.min_time_s = r.number("min_time_s", false, l.min_time_s, 0);
  l.check_timeout_s = r.number("check_timeout_s", false, l.check_timeout_s, 1);
  l.lab_timeout_s = r.number("lab_timeout_s", false, l.lab_timeout_s, 1);
  // One program run must fit in its check's cap, and one check in its lab's.
  const double one_run = std::max(l.test_timeout_s, l.bench_timeout_s);
  if (l.check_timeout_s < one_run)
    r.fail(node["check_timeout_s"] ? node["check_timeout_s"] : node,
           "limits.check_timeout_s (" + Reader::fmt(l.check_timeout_s) +
               ") must be at least test_timeout_s and bench_timeout_s (" + Reader::fmt(one_run) +
               "): one program run must fit in its check's time cap");
  if (l.lab_timeout_s < l.check_timeout_s)
    r.fail(node["lab_timeout_s"] ? node["lab_timeout_s"] : node,
           "limits.lab_timeout_s (" + Reader::fmt(l.lab_timeout_s) +
               ") must be at least check_timeout_s (" + Reader::fmt(l.check_timeout_s) + ")");
  r.finish();
  return l;
}

}  // namespace

const char* to_string(CheckKind kind) {
  switch (kind) {
    case CheckKind::kTest:
      return "test";
    case CheckKind::kSpeed:
      return "speed";
    case CheckKind::kMemory:
      return "memory";
  }
  return "?";
}

const Check* Rubric::find_check(const std::string& name) const {
  for (const auto& c : checks)
    if (c.name == name) return &c;
  return nullptr;
}

double Rubric::max_points() const {
  double total = 0;
  for (const auto& c : checks) total += c.points;
  return total;
}

Rubric parse_rubric(const std::string& text, const fs::path& path, const std::string& dir) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw RubricError(path.string() + ":" + std::to_string(e.mark.line + 1) +
                      ": not valid YAML: " + e.msg);
  }
  if (!root || root.IsNull()) throw RubricError(path.string() + ":1: the rubric is empty");
  Reader r(root, "", path);
  Rubric rb;
  rb.path = path;
  rb.dir = dir;
  rb.lab = r.str("lab", true);
  if (dir.size() >= 2 && dir.compare(0, 2, rb.lab) != 0)
    r.fail(root["lab"], "lab: '" + rb.lab + "' does not match the folder " + dir +
                            " (TODO markers are TODO(lab" + dir.substr(0, 2) + "))");
  rb.title = r.str("title", true);
  rb.student_files = r.strings("student_files", true);
  if (rb.student_files.empty()) r.fail(root, "student_files: list at least one file");
  for (const auto& f : rb.student_files) {
    const fs::path p(f);
    if (p.is_absolute() || f.find("..") != std::string::npos)
      r.fail(root["student_files"], "student_files: '" + f + "' must be a path inside the lab");
  }
  rb.limits = parse_limits(r.get("limits", false), path);

  const YAML::Node checks = r.get("checks", true);
  if (!checks.IsSequence() || checks.size() == 0)
    r.fail(checks, "checks: expected a non-empty list of checks");
  for (std::size_t i = 0; i < checks.size(); ++i) {
    Check c = parse_check(checks[i], "checks[" + std::to_string(i) + "]", path);
    if (rb.find_check(c.name)) r.fail(checks[i], "checks: two checks are named '" + c.name + "'");
    rb.checks.push_back(std::move(c));
  }

  const YAML::Node todos = r.get("todos", false);
  if (todos) {
    if (!todos.IsSequence()) r.fail(todos, "todos: expected a list");
    for (std::size_t i = 0; i < todos.size(); ++i) {
      const std::string where = "todos[" + std::to_string(i) + "]";
      Reader t(todos[i], where, path);
      Todo todo;
      todo.id = t.str("id", true);
      todo.file = t.str("file", true);
      todo.checks = t.strings("checks", true);
      todo.forbidden = t.strings("forbidden", false);
      t.finish();
      if (std::find(rb.student_files.begin(), rb.student_files.end(), todo.file) ==
          rb.student_files.end())
        t.fail(todos[i]["file"], where + ".file: '" + todo.file + "' is not in student_files");
      for (const auto& name : todo.checks)
        if (!rb.find_check(name))
          t.fail(todos[i]["checks"], where + ".checks: no check is named '" + name + "'");
      rb.todos.push_back(std::move(todo));
    }
  }
  r.finish();
  return rb;
}

Rubric load_rubric(const fs::path& rubric_yaml) {
  std::ifstream in(rubric_yaml);
  if (!in) throw RubricError(rubric_yaml.string() + ":0: cannot read the rubric");
  std::stringstream s;
  s << in.rdbuf();
  return parse_rubric(s.str(), rubric_yaml, rubric_yaml.parent_path().filename().string());
}

std::vector<Rubric> load_course_rubrics(const fs::path& course) {
  std::vector<fs::path> dirs;
  const fs::path labs = course / "labs";
  if (fs::is_directory(labs)) {
    for (const auto& e : fs::directory_iterator(labs)) {
      const std::string name = e.path().filename().string();
      if (e.is_directory() && name.size() > 3 &&
          std::isdigit(static_cast<unsigned char>(name[0])) &&
          std::isdigit(static_cast<unsigned char>(name[1])) && name[2] == '-' &&
          fs::exists(e.path() / "rubric.yaml"))
        dirs.push_back(e.path());
    }
  }
  std::sort(dirs.begin(), dirs.end());
  std::vector<Rubric> out;
  for (const auto& d : dirs) out.push_back(load_rubric(d / "rubric.yaml"));
  return out;
}

}  // namespace gtl::grader
