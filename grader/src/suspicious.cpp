// Pattern scan of student files (see suspicious.h).
#include "suspicious.h"

#include <fstream>
#include <regex>

namespace gtl::grader {
namespace {

struct Pattern {
  const char* category;
  std::regex re;
};

const std::vector<Pattern>& patterns() {
  static const std::vector<Pattern> all = [] {
    auto p = [](const char* category, const char* re) {
      return Pattern{category, std::regex(re, std::regex::ECMAScript | std::regex::optimize)};
    };
    return std::vector<Pattern>{
        p("process",
          R"(\b(fork|vfork|exec[lv]p?e?|posix_spawnp?|system|popen|setsid|daemon|kill|ptrace|clone|prctl|_exit|atexit|at_quick_exit|signal|sigaction)\s*\()"),
        p("file",
          R"(\b(fopen|freopen|open|openat|creat|unlink|rename|remove|mkdir|truncate|dup2?|write)\s*\(|std::(o|i)?fstream|std::filesystem|#include\s*<(filesystem|fstream)>|/proc/|/dev/)"),
        p("environment", R"(\b(getenv|secure_getenv|setenv|unsetenv|putenv|clearenv|environ)\b)"),
        p("arguments", R"(cmdline|__libc_argv|program_invocation_(short_)?name|\bGetArgvs\b)"),
        p("test harness",
          R"(gtest|GTEST_|testing::|benchmark::|UnitTest|GTL_GRADER|GTL_TEST_SEED)"),
        p("inline assembly", R"(\b(asm|__asm__|__asm)\b)"),
        p("startup code",
          R"(__attribute__\s*\(\(\s*(constructor|destructor)|init_priority|\.init_array|\.fini_array)"),
        p("include", R"(#\s*include\s*["<](/|\.\./|[^">]*/\.\./))"),
    };
  }();
  return all;
}

std::string trimmed(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, 160);
}

}  // namespace

std::vector<SuspiciousLine> suspicious_lines(const std::filesystem::path& submission,
                                             const Rubric& lab) {
  std::vector<SuspiciousLine> out;
  for (const auto& f : lab.student_files) {
    std::ifstream in(submission / lab.dir / f);
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      if (line.size() > 4096) line.resize(4096);
      for (const auto& p : patterns()) {
        if (!std::regex_search(line, p.re)) continue;
        out.push_back({lab.dir + "/" + f + ":" + std::to_string(n), p.category, trimmed(line)});
        break;  // one category per line is enough to look at it
      }
    }
  }
  return out;
}

}  // namespace gtl::grader
