#!/usr/bin/env bash
# README command 1: installs what is missing, builds the grader and grades your starter/ tree.
#
#   scripts/start.sh                 grade every lab
#   scripts/start.sh --lab 01        one lab (any gtl-grade option can follow)
#
# The grader compiles only your lab files (those listed in each lab's rubric) against the
# pristine tests, in its own build folder (build/gtl-grade), and writes its reports to
# build/gtl-grade/results (report.html, results.json, report.json, junit.xml).
# The training core is compiled once, in build/student (the course guide's build, which also
# builds the demo): the grader links that core instead of compiling its own (GTL_PREBUILT_CORE,
# cmake/GtlPrebuiltCore.cmake), so grading compiles only the lab files. GTL_PREBUILT_CORE=<build
# folder> in the environment takes the core from that build instead (the CI test of this command
# does so with the CI build's core).
# Idempotent: a rerun rebuilds only what changed.
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: scripts/start.sh [gtl-grade grade options]

Installs what is missing, builds the grader and grades your starter/ tree (README command 1).

  scripts/start.sh                 grade every lab
  scripts/start.sh --lab 01        one lab
  scripts/start.sh --help          this text (builds nothing)

Any option of `gtl-grade grade` can follow (--lab, --checks, --cpu-only, --seed, --quiet, ...); once built,
`build/student/grader/gtl-grade grade --help` lists them all.
Reports: build/gtl-grade/results/report.html (open it in a browser), results.json, report.json,
junit.xml. A rerun rebuilds only what changed.

Environment: GTL_JOBS (parallel build jobs, default all cores); GTL_PREBUILT_CORE (a build
folder of this course whose compiled training core to use instead of compiling it in
build/student).
USAGE
}
for arg in "$@"; do
  if [[ "$arg" == "-h" || "$arg" == "--help" ]]; then
    usage
    exit 0
  fi
done

source "$(dirname "$0")/common.sh"
cd "$root"

step "1/4 dependencies"
scripts/install-deps.sh

core="${GTL_PREBUILT_CORE:-}"
[[ -n "$core" ]] && core="$(realpath -m "$core")"
step "2/4 configure (preset student: your starter/ tree)"
cmake --preset student -DGTL_PREBUILT_CORE="$core"

if [[ -z "$core" ]]; then
  step "3/4 build the grader and the training core ($jobs jobs; the core only the first time)"
  cmake --build --preset student -j "$jobs" --target gtl-grade gtl_prebuilt_core
  core="$root/build/student"
else
  step "3/4 build the grader ($jobs jobs; the training core comes from $core)"
  cmake --build --preset student -j "$jobs" --target gtl-grade
fi

step "4/4 grade starter/ (the grader builds each lab's files against the core and runs its checks)"
build/student/grader/gtl-grade grade --cmake-arg="-DGTL_PREBUILT_CORE=$core" "$@"
