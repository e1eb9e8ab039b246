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
source "$(dirname "$0")/common.sh"
cd "$root"

step "1/4 dependencies"
scripts/install-deps.sh

step "2/4 configure (preset student: your starter/ tree)"
cmake --preset student

step "3/4 build the grader ($jobs jobs)"
cmake --build --preset student -j "$jobs" --target gtl-grade

step "4/4 grade starter/ (the grader builds and runs each lab's checks)"
exec build/student/grader/gtl-grade grade "$@"
