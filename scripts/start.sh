#!/usr/bin/env bash
# README command 1: installs what is missing, builds the grader and grades your starter/ tree.
#
#   scripts/start.sh                 grade every lab
#   scripts/start.sh --lab 01        one lab (any gtl-grade option can follow)
#
# The grader compiles only your lab files (those listed in each lab's rubric) against the
# pristine tests, in its own build folder (build/gtl-grade), and writes its reports to
# build/gtl-grade/results (report.html, results.json, report.json, junit.xml).
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

step "2/4 configure (preset student: your starter/ tree)"
cmake --preset student

step "3/4 build the grader ($jobs jobs)"
cmake --build --preset student -j "$jobs" --target gtl-grade

step "4/4 grade starter/ (the grader builds and runs each lab's checks)"
build/student/grader/gtl-grade grade "$@"
