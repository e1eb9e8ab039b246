#!/usr/bin/env bash
# The spread of a CPU speed check's figure: runs its benchmark program RUNS times exactly as the
# grader does (the same flags: repetitions, min time, medians compared) and prints each run's
# speedup, then the minimum, median and maximum. An instructor uses it before setting a CPU speed
# check's bar and floor (docs/grader.md, "Timing on a CPU"): the floor, which verify holds the
# solution to, must sit far below the minimum measured on a loaded machine.
#
#   scripts/timing-spread.sh BINARY BENCHMARK BASELINE [RUNS] [REPETITIONS] [MIN_TIME_S]
#   e.g. scripts/timing-spread.sh build/ci/labs/04-memory/lab04_bench BM_AllocFree/1 BM_AllocFree/0 10 3
#
# The speedup is real_time(BASELINE) / real_time(BENCHMARK), medians over REPETITIONS (the rubric's
# `repetitions`, default 5), each repetition at least MIN_TIME_S (`min_time_s`, default 0.1).
set -euo pipefail
binary=${1:?binary}
bench=${2:?benchmark}
base=${3:?baseline}
runs=${4:-10}
reps=${5:-5}
min_time=${6:-0.1}
out=$(mktemp)
trap 'rm -f "$out"' EXIT

# The median real_time of benchmark $1 in the JSON file $2 (Google Benchmark's "_median" row).
median_of() {
  awk -v want="$1_median" '
    /"name":/ { gsub(/[",]/, "", $2); name = $2 }
    /"real_time":/ && name == want { gsub(/,/, "", $2); print $2; exit }' "$2"
}

# The filter the grader builds: both names, anchored, regex metacharacters escaped.
escape() { printf '%s' "$1" | sed 's/[][\\.^$*+?(){}|]/\\&/g'; }
filter="^($(escape "$bench")|$(escape "$base"))\$"

figures=()
for ((i = 1; i <= runs; i++)); do
  "$binary" --benchmark_filter="$filter" --benchmark_repetitions="$reps" \
    --benchmark_display_aggregates_only=true --benchmark_min_time="$min_time" \
    --benchmark_format=console --benchmark_color=false --benchmark_out_format=json \
    --benchmark_out="$out" >/dev/null 2>&1 || { echo "run $i: the benchmark program failed" >&2; exit 1; }
  fast=$(median_of "$bench" "$out")
  slow=$(median_of "$base" "$out")
  [[ -n "$fast" && -n "$slow" ]] || { echo "run $i: no median for $bench or $base" >&2; exit 1; }
  figures+=("$(awk -v a="$slow" -v b="$fast" 'BEGIN { printf "%.3g", a / b }')")
  printf 'run %2d: speedup %sx (load average %s)\n' "$i" "${figures[-1]}" "$(cut -d' ' -f1 /proc/loadavg)"
done
printf '%s\n' "${figures[@]}" | sort -g | awk '
  { v[NR] = $1 }
  END { printf "%s runs: min %sx, median %sx, max %sx\n", NR, v[1], (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2), v[NR] }'
