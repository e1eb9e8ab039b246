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
      s.tmpfs_size =
          s.available && run_process({"bwrap", "--unshare-all", "--die-with-parent", "--ro-bind",
                                      "/", "/", "--dev-bind", "/dev", "/dev", "--size", "1048576",
                                      "--tmpfs", "/dev/shm", "true"},
                                     limits)
                             .ok();
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
      "--proc", "/proc"};
  // A private /tmp and /dev/shm (the machine's /dev/shm is shared with every user, and files
  // left there would outlive the program), each bounded where bwrap can size a tmpfs.
  const std::string size = std::to_string(static_cast<long long>(policy.tmpfs_mb * 1024 * 1024));
  for (const char* dir : {"/tmp", "/dev/shm"}) {
    if (!sandbox_support().tmpfs_size && std::string(dir) == "/dev/shm") continue;
    if (sandbox_support().tmpfs_size && policy.tmpfs_mb > 0)
      argv.insert(argv.end(), {"--size", size});
    argv.insert(argv.end(), {"--tmpfs", dir});
  }
  // Temporary files go to that private /tmp: a TMPDIR inherited from outside names a folder the
  // sandbox does not show, and nvcc, for one, then fails (CMake would find no CUDA compiler and
  // the build would differ from the one outside, its prebuilt core unusable).
  argv.insert(argv.end(), {"--setenv", "TMPDIR", "/tmp"});
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
