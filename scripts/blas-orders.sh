#!/usr/bin/env bash
# Runs the CPU tests under other summation orders than this machine's: OpenBLAS forced to each of
# its kernel types this CPU can run (OPENBLAS_CORETYPE: the generic SSE kernel, Nehalem,
# Sandybridge, Haswell, Zen, SkylakeX, Cooperlake) on 1 and 2 BLAS threads, each with a grading
# seed drawn at random (GTL_TEST_SEED: the labs' seeded shapes). A tolerance derived from one
# CPU's rounding that does not hold for another order fails here, not on the next machine's CI.
#
#   scripts/blas-orders.sh [BUILD_DIR] [CTEST_REGEX]   (default build/ci, every cpu test except
#                                                       the slow end-to-end ones; ~30 s a run)
# Kernel types the CPU lacks (AVX-512 ones on an older x86) fall back to the best it has.
set -euo pipefail
source "$(dirname "$0")/common.sh"
cd "$root"
build=${1:-build/ci}
regex=${2:-.}
failed=0
for coretype in Prescott Nehalem Sandybridge Haswell Zen SkylakeX Cooperlake; do
  for threads in 1 2; do
    seed=$(((RANDOM << 15) | RANDOM))
    if out=$(OPENBLAS_CORETYPE=$coretype GTL_BLAS_THREADS=$threads GTL_TEST_SEED=$seed \
      ctest --test-dir "$build" -L cpu -R "$regex" -E 'readme_command|grader_(e2e|hostile|judge)' \
        -j "$jobs" 2>&1); then
      echo "$coretype, $threads thread(s), seed $seed: $(echo "$out" | grep 'tests passed')"
    else
      echo "$coretype, $threads thread(s), seed $seed: FAILED"
      echo "$out" | grep -E '\(Failed\)|\(Timeout\)'
      failed=1
    fi
  done
done
exit $failed
