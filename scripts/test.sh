#!/usr/bin/env bash
# README command 2: build everything, run the whole test suite, and verify every lab with the
# grader (CPU-gradable checks).
# Passes on a machine without a GPU (GPU tests are skipped with a reason) and runs the GPU tests
# where a GPU exists. Idempotent: reruns reuse build/ci and rebuild only what changed.
set -euo pipefail
source "$(dirname "$0")/common.sh"
cd "$root"

step "1/5 dependencies"
scripts/install-deps.sh

step "2/5 configure (preset ci: solution build, warnings as errors)"
cmake --preset ci

step "3/5 build ($jobs jobs)"
cmake --build --preset ci -j "$jobs"

step "4/5 verify the labs: the solution earns every CPU-gradable check, the starter fails each TODO's"
build/ci/grader/gtl-grade verify --cpu-only

step "5/5 tests"
ctest --preset ci -j "$jobs"
