// Forbidden core symbols in a student's compiled file (see forbidden_symbols.h).
#include "forbidden_symbols.h"

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "process.h"

namespace gtl::grader {

namespace {

namespace fs = std::filesystem;

struct CompileCommand {
  std::string command;    // the shell command CMake wrote for this source
  std::string directory;  // where to run it
  std::string output;     // the object it writes (relative to directory)
};

// compile_commands.json, keyed by the absolute path of each source.
std::map<std::string, CompileCommand> compile_commands(const fs::path& build_dir) {
  std::map<std::string, CompileCommand> out;
  std::ifstream in(build_dir / "compile_commands.json");
  if (!in) return out;
  const nlohmann::json all = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!all.is_array()) return out;
  for (const auto& entry : all) {
    if (!entry.contains("file") || !entry.contains("command") || !entry.contains("directory"))
      continue;
    CompileCommand c;
    c.command = entry["command"].get<std::string>();
    c.directory = entry["directory"].get<std::string>();
    if (entry.contains("output")) c.output = entry["output"].get<std::string>();
    out[fs::weakly_canonical(entry["file"].get<std::string>()).string()] = c;
  }
  return out;
}

// The same compile without optimisation or inlining, into `object`: inline core functions the
// file calls are then emitted in it and visible to nm. Dependency-file flags are dropped so the
// build's own .d files stay as they were.
std::string unoptimised(std::string command, const fs::path& object) {
  static const std::regex output(R"((^|\s)-o\s+\S+)"), deps(R"((^|\s)-(MD|MMD)\b)"),
      dep_args(R"((^|\s)-(MT|MF|MQ)\s+\S+)");
  command = std::regex_replace(command, dep_args, "$1");
  command = std::regex_replace(command, deps, "$1");
  command = std::regex_replace(command, output, "$1");
  return command + " -O0 -fno-inline -o '" + object.string() + "'";
}

bool is_cuda(const std::string& file) {
  return file.size() > 3 && (file.ends_with(".cu") || file.ends_with(".cuh"));
}

// The demangled names of the symbols `object` defines or references ("U", "W", "T", ...).
std::vector<std::string> symbols(const fs::path& object, bool undefined_only,
                                 const fs::path& scratch) {
  RunLimits limits;
  limits.timeout_s = 60;
  limits.output_bytes = 64 * 1024 * 1024;
  std::vector<std::string> argv = {"nm", "-C"};
  if (undefined_only) argv.push_back("--undefined-only");
  argv.push_back(object.string());
  const RunResult r = run_process(argv, limits, scratch);
  std::vector<std::string> out;
  if (!r.ok()) return out;
  std::istringstream lines(r.output);
  for (std::string line; std::getline(lines, line);) {
    // "                 U gtl::optim::LossScaler::unscale_(...)"  or  "0000000000000000 W gtl::..."
    static const std::regex row(R"(^\s*[0-9a-fA-F]*\s+[A-Za-z]\s+(.+)$)");
    std::smatch m;
    if (std::regex_match(line, m, row)) out.push_back(m[1]);
  }
  return out;
}

}  // namespace

std::vector<ForbiddenUse> find_forbidden_uses(const Rubric& rubric, const fs::path& build_dir,
                                              const fs::path& impl_dir, const fs::path& scratch) {
  std::vector<ForbiddenUse> uses;
  bool any = false;
  for (const Todo& t : rubric.todos) any = any || !t.forbidden.empty();
  if (!any) return uses;
  const auto commands = compile_commands(build_dir);
  fs::create_directories(scratch);
  std::map<std::string, std::vector<std::string>> seen;  // file -> its symbols (one compile each)
  for (const Todo& todo : rubric.todos) {
    if (todo.forbidden.empty()) continue;
    if (!seen.count(todo.file)) {
      const std::string source = fs::weakly_canonical(impl_dir / rubric.dir / todo.file).string();
      auto it = commands.find(source);
      std::vector<std::string>& names = seen[todo.file];
      if (it == commands.end()) continue;  // a header, or not built here: nothing to inspect
      const CompileCommand& c = it->second;
      if (is_cuda(todo.file)) {
        names = symbols(fs::path(c.directory) / c.output, /*undefined_only=*/true, scratch);
      } else {
        const fs::path object =
            fs::absolute(scratch / ("forbidden-" + rubric.lab + "-" +
                                    fs::path(todo.file).stem().string() + ".o"));
        RunLimits limits;
        limits.timeout_s = 300;
        const RunResult r =
            run_process({"sh", "-c", unoptimised(c.command, object)}, limits, c.directory);
        if (r.ok()) names = symbols(object, /*undefined_only=*/false, scratch);
      }
    }
    for (const std::string& name : seen[todo.file]) {
      for (const std::string& prefix : todo.forbidden) {
        if (name.rfind(prefix, 0) == 0) {
          uses.push_back({todo.id, todo.file, name, prefix});
          break;
        }
      }
    }
  }
  return uses;
}

std::string describe(const ForbiddenUse& use) {
  return "TODO " + use.todo + " (" + use.file + ") uses the core's " + use.symbol +
         ": this TODO asks you to write it yourself, without the core's implementation (" +
         use.prefix + "...)";
}

}  // namespace gtl::grader
