#!/usr/bin/env bash
# Certifies a GPU machine in one command: builds everything for this machine's GPU, runs the gpu
# tests, runs them again under compute-sanitizer (memcheck), runs every benchmark, verifies every
# lab with the grader (GPU checks included: the solution must earn full marks), and writes a
# dated Markdown report to docs/results/<date>-<gpu>.md naming the GPU, driver and CUDA version,
# with every figure. Instructors use it to certify a lab machine; developers on a lent GPU.
#
#   scripts/certify-gpu.sh [--quick]     --quick: 1 benchmark repetition instead of 5
#
# Exit status: 0 when every step passed; 1 when a step failed (the report says which);
# 2 when there is no GPU or no CUDA toolkit.
set -uo pipefail
source "$(dirname "$0")/common.sh"
cd "$root"

reps=5
[[ ${1:-} == --quick ]] && reps=1

if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "certify-gpu: no GPU visible (nvidia-smi -L failed); nothing to certify" >&2
  exit 2
fi
command -v nvcc >/dev/null || { echo "certify-gpu: nvcc not found: install the CUDA toolkit" >&2; exit 2; }

gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)
cuda=$(nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')
today=$(date -u +%F)
slug=$(echo "$gpu" | tr '[:upper:]' '[:lower:]' | tr -cs 'a-z0-9' '-' | sed 's/-$//')
work="build/gpu/certify"
report="docs/results/$today-$slug.md"
mkdir -p "$work" docs/results
failed=()

step "1/6 dependencies"
scripts/install-deps.sh

step "2/6 configure and build for $gpu (preset gpu: native architectures)"
{ cmake --preset gpu && cmake --build --preset gpu -j "$jobs"; } 2>&1 | tee "$work/build.log" | tail -5
[[ ${PIPESTATUS[0]} -eq 0 ]] || { echo "certify-gpu: build failed, see $work/build.log" >&2; exit 1; }

step "3/6 gpu tests"
ctest --preset gpu -j 1 2>&1 | tee "$work/gpu-tests.log"
[[ ${PIPESTATUS[0]} -eq 0 ]] || failed+=("gpu tests")

step "4/6 gpu tests under compute-sanitizer (memcheck)"
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
: >"$work/sanitizer.log"
mapfile -t gpu_tests < <(ctest --test-dir build/gpu -L gpu -N -V | sed -n 's/.*Test command: \([^ ]*\).*/\1/p')
sanitizer_rows=""
for t in "${gpu_tests[@]}"; do
  name=$(basename "$t")
  if "$sanitizer" --tool memcheck --error-exitcode 99 "$t" --gtest_brief=1 >>"$work/sanitizer.log" 2>&1; then
    sanitizer_rows+="| $name | clean |"$'\n'
  else
    sanitizer_rows+="| $name | **errors** (see sanitizer log) |"$'\n'
    failed+=("memcheck $name")
  fi
  echo "  memcheck $name: $(tail -1 "$work/sanitizer.log")"
done

step "5/6 benchmarks ($reps repetitions, medians)"
bench_json=()
while read -r b; do
  [[ -n $b ]] || continue
  out="$work/$(basename "$b").json"
  echo "  $(basename "$b")"
  "$b" --benchmark_repetitions="$reps" --benchmark_report_aggregates_only=true \
    --benchmark_min_time=0.2 --benchmark_out="$out" --benchmark_out_format=json >/dev/null 2>>"$work/bench.log" \
    || failed+=("benchmark $(basename "$b")")
  bench_json+=("$out")
done < build/gpu/benchmarks.txt

step "6/6 grader verify, every check including the GPU ones"
build/gpu/grader/gtl-grade verify 2>&1 | tee "$work/verify.log"
[[ ${PIPESTATUS[0]} -eq 0 ]] || failed+=("grader verify")

{
  echo "# Certification: $gpu, $today"
  echo
  echo "| | |"
  echo "|---|---|"
  echo "| GPU | $gpu |"
  echo "| driver | $driver |"
  echo "| CUDA toolkit | $cuda |"
  echo "| host | $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB |"
  echo "| commit | $(git rev-parse --short HEAD 2>/dev/null || echo unknown) |"
  echo "| result | $([[ ${#failed[@]} -eq 0 ]] && echo "all steps passed" || echo "FAILED: ${failed[*]}") |"
  echo
  echo "## GPU tests"
  echo
  echo '```'
  grep -E "Test +#|tests passed|tests failed" "$work/gpu-tests.log"
  echo '```'
  echo
  echo "## compute-sanitizer memcheck"
  echo
  echo "| test binary | result |"
  echo "|---|---|"
  printf '%s' "$sanitizer_rows"
  echo
  echo "## Grader: verify (solution and starter, every lab)"
  echo
  echo '```'
  sed 's/\x1b\[[0-9;]*m//g' "$work/verify.log"
  echo '```'
  echo
  echo "## Benchmarks (median of $reps)"
  build/gpu/common/tools/bench_to_markdown "${bench_json[@]}"
} >"$report"

echo
echo "report: $report"
if ((${#failed[@]})); then
  echo "certify-gpu: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "certify-gpu: all steps passed"
