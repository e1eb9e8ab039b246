// bubblewrap command lines (see sandbox.h).
#include "sandbox.h"

#include <cstdlib>

#include "process.h"

namespace gtl::grader {

namespace fs = std::filesystem;

const SandboxSupport& sandbox_support() {
  static const SandboxSupport support = [] {
    SandboxSupport s;
    const char* off = std::getenv("GTL_GRADER_NO_SANDBOX");
    if (off != nullptr && std::string(off) == "1") {
      s.why_not = "GTL_GRADER_NO_SANDBOX=1";
    } else if (!program_available("bwrap")) {
      s.why_not = "bubblewrap is not installed (apt-get install bubblewrap)";
    } else {
      RunLimits limits;
      limits.timeout_s = 20;
      const RunResult r = run_process(
          {"bwrap", "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "true"}, limits);
      s.available = r.ok();
      if (!s.available)
        s.why_not = "bubblewrap cannot create namespaces here (" + r.describe(20) +
                    "; user namespaces may be disabled): " + r.output.substr(0, 200);
    }
    return s;
  }();
  return support;
}

std::vector<std::string> sandbox_wrapper(const SandboxPolicy& policy) {
  if (!sandbox_support().available) return {};
  // Order matters: later mounts go on top of earlier ones.
  std::vector<std::string> argv = {
      "bwrap",  "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "--dev-bind",
      "/dev",   "/dev",  // GPUs: /dev/nvidia*
      "--proc", "/proc",         "--tmpfs",           "/tmp"};
  for (const auto& r : policy.readable) {
    std::error_code ec;
    if (!fs::exists(r, ec)) continue;
    const std::string p = fs::absolute(r).string();
    argv.insert(argv.end(), {"--ro-bind", p, p});
  }
  for (const auto& w : policy.writable) {
    std::error_code ec;
    fs::create_directories(w, ec);
    const std::string p = fs::absolute(w).string();
    argv.insert(argv.end(), {"--bind", p, p});
  }
  for (const auto& h : policy.hidden) {
    std::error_code ec;
    if (!fs::is_directory(h, ec)) continue;
    const std::string p = fs::absolute(h).string();
    argv.insert(argv.end(), {"--tmpfs", p, "--remount-ro", p});
  }
  argv.push_back("--");
  return argv;
}

}  // namespace gtl::grader
