#!/usr/bin/env bash
# README command 2: build everything and run the whole test suite.
# Passes on a machine without a GPU (GPU tests are skipped with a reason) and runs the GPU tests
# where a GPU exists. Idempotent: reruns reuse build/ci and rebuild only what changed.
set -euo pipefail
source "$(dirname "$0")/common.sh"
cd "$root"

step "1/4 dependencies"
scripts/install-deps.sh

step "2/4 configure (preset ci: solution build, warnings as errors)"
cmake --preset ci

step "3/4 build ($jobs jobs)"
cmake --build --preset ci -j "$jobs"

step "4/4 tests"
ctest --preset ci -j "$jobs"
