#!/usr/bin/env bash
# README command 1 as a new student runs it: a clean clone of this repository's HEAD, then
# `./scripts/start.sh`, and what the README promises of it: exit status 0, the reports
# (report.html, results.json, junit.xml), the TODO(labNN) markers still open in every lab, and a
# next step that links to the TODO's place in its handout.
#
#   scripts/tests/readme_command_1.sh <core build folder>
#
# The CI suite runs it (CTest readme_command_1, label cpu). To fit the CI budget the clone takes
# the training core from <core build folder> (GTL_PREBUILT_CORE: a build of the same sources with
# the same settings, which the course's CMake checks; no compiler cache involved), so it compiles
# the grader and the labs but not the core; the test fails if the core was compiled again (unless
# the checkout has uncommitted core changes, which the clone of HEAD lacks). The rest is command 1
# unchanged. Exit 77 (CTest: skipped) when the course is not a git checkout.
set -euo pipefail

core="$(realpath "${1:?usage: readme_command_1.sh <core build folder>}")"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
if ! git -C "$root" rev-parse --verify -q HEAD >/dev/null; then
  echo "SKIPPED: $root is not a git checkout with a commit: nothing to clone"
  exit 77
fi

fail() {
  echo "FAILED: $*"
  exit 1
}

tmp="$(mktemp -d "${TMPDIR:-/tmp}/gtl-command-1.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
git clone -q "$root" "$tmp/course"
# The core is shared only when the clone's core sources are those the core was built from: not so
# when the checkout has uncommitted changes there (then the clone compiles its own, and says why).
shared=1
if ! git -C "$root" diff --quiet HEAD -- common cmake; then
  shared=0
  echo "NOTE: uncommitted changes in common/ or cmake/: the clone of HEAD compiles its own core"
fi
echo "clone of $(git -C "$tmp/course" log -1 --format='%h %s')"

# A CPU-only core can only serve a CPU-only grading (the core's settings must match).
args=()
if grep -qx "GTL_CUDA:STRING=OFF" "$core/CMakeCache.txt"; then
  args+=(--cpu-only)
fi

start=$SECONDS
set +e
(cd "$tmp/course" && GTL_PREBUILT_CORE="$core" GTL_JOBS="${GTL_JOBS:-2}" \
  ./scripts/start.sh "${args[@]}") >"$tmp/output.txt" 2>&1
status=$?
set -e
seconds=$((SECONDS - start))
cat "$tmp/output.txt"
echo "README command 1 (clone, core from $core): exit $status in ${seconds}s"

[[ $status -eq 0 ]] ||
  fail "README command 1 exited $status; the README promises 0 on a starter tree"
results="$tmp/course/build/gtl-grade/results"
for f in report.html results.json report.json junit.xml; do
  [[ -s "$results/$f" ]] || fail "no report $results/$f: the README promises it"
done
for lab in "$tmp"/course/labs/[0-9][0-9]-*/; do
  n="$(basename "$lab" | cut -c1-2)"
  [[ -f "$lab/rubric.yaml" ]] || continue
  grep -q "Still marked TODO(lab$n):" "$tmp/output.txt" ||
    fail "the report lists no open TODO(lab$n) markers for the starter's lab $n"
done
grep -Eq '^next: TODO [0-9a-z]+ in [^ ]+, see labs/[0-9]{2}-[^ ]+/README\.md#todo-[0-9a-z]+$' \
  "$tmp/output.txt" ||
  fail "the report does not end with 'next: TODO <id> in <file>, see <handout>#todo-<id>'"
if ((shared)) && [[ -d "$tmp/course/build/gtl-grade/work/build/common" ]]; then
  fail "the grader compiled the core again instead of taking it from $core" \
    "(its configure output above says why; reconfigure and build that folder if older than HEAD)"
fi
echo "PASSED: exit 0, reports, the open TODOs of every lab and the next step; core not recompiled"
