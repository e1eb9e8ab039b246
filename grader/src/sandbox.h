// The sandbox every child process of a grading runs in: bubblewrap (Debian's `bubblewrap`).
//
// Why: the student's code runs in the builds' compilers' reach (#include) and inside the test
// and benchmark programs. Without a sandbox it can read the instructor's solution/, rewrite the
// pristine course (another lab's tests, a rubric) before a later check uses it, write into the
// reports, reach the network or the other submissions of a batch. Under bubblewrap a child sees
// the whole file system read-only, with the solution, the reports and the submissions replaced by
// empty folders; it may write only to the folders the policy names (its scratch folder; the
// build folder for builds); it has no network (its own network namespace) and its own PID
// namespace (when its first process dies, the kernel kills every other one).
//
// Where bubblewrap is missing or user namespaces are not allowed, children run unsandboxed and
// the grader says so in its progress lines and reports (docs/grader.md, "Trust model").
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace gtl::grader {

struct SandboxPolicy {
  std::vector<std::filesystem::path> readable;  // bound read-only again over the private /tmp
  std::vector<std::filesystem::path> writable;  // bound read-write (created when missing)
  std::vector<std::filesystem::path> hidden;    // replaced by an empty read-only folder
  // The size of each of the private /tmp and /dev/shm (tmpfs, memory: counted by the memory
  // bound, process.h); 0 leaves them at the kernel's default (half the machine's memory).
  double tmpfs_mb = 0;
};

struct SandboxSupport {
  bool available = false;
  bool tmpfs_size = false;  // bwrap has --size (0.5+): the private /tmp and /dev/shm are bounded
  std::string why_not;      // when not available: what is missing, for the warning
};

// Probes once: `bwrap --unshare-all --die-with-parent --ro-bind / / true` must succeed; then
// whether a sized private /dev/shm can be mounted (`--size`).
// GTL_GRADER_NO_SANDBOX=1 turns the sandbox off (the grader's own tests of the fallback).
const SandboxSupport& sandbox_support();

// The argv prefix that runs a program under `policy` ({} when the sandbox is not available).
std::vector<std::string> sandbox_wrapper(const SandboxPolicy& policy);

}  // namespace gtl::grader
