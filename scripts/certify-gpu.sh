#!/usr/bin/env bash
# Certifies a GPU machine: builds for this machine's GPU what the steps run (not the CPU tests),
# runs the gpu tests, runs labs 01-02's under compute-sanitizer (memcheck), runs every benchmark,
# verifies every lab with the grader (GPU checks included: the solution must earn full marks),
# stores the solution's speedups on this GPU (gtl-grade calibrate) and writes a dated Markdown
# report to docs/results/<date>-<gpu>.md naming the GPU, driver and CUDA version, with every
# figure. Instructors use it to certify a lab machine; developers on a lent GPU.
#
#   scripts/certify-gpu.sh [--quick] [--only STEP,STEP,...] [--lab NN]... [--cmake-arg ARG]...
#                          [--results DIR]
#     --quick      1 benchmark repetition instead of 5
#     --lab        verify only this lab (repeatable; default every lab): its results go to
#                  build/gpu/certify/verify-NN and its log is added to the report's, so a machine
#                  lent for minutes verifies the course a few labs per call
#     --only       run these steps only: deps build test sanitize bench verify calibrate report
#                  (default: all, in that order)
#     --cmake-arg  an extra argument for configuring the course, also passed to the grader's
#                  builds (the GPU kit points CMake at its unpacked packages with these)
#     --results    where the report goes (default docs/results)
#     --no-gpu     allow the build and test steps (only those) without a GPU, the gpu tests then
#                  skipping: the GPU kit's rehearsal (scripts/gpu-kit-rehearse.sh) runs call 1's
#                  steps exactly so; CMAKE_CUDA_ARCHITECTURES must come in a --cmake-arg
#
# Each step keeps its results in build/gpu/certify, and `report` writes the report from whatever
# steps have run, so a machine lent by the call (with a time limit per command) certifies in a few
# calls, e.g. `--only deps,build,test`, then `--only sanitize`, then `--only bench,verify,report`.
#
# Exit status: 0 when every step run passed; 1 when one failed (the report says which);
# 2 when there is no GPU or no CUDA toolkit.
set -uo pipefail
source "$(dirname "$0")/common.sh"
cd "$root"

reps=5
steps="deps,build,test,sanitize,bench,verify,calibrate,report"
cmake_args=()
labs=()
results=docs/results
no_gpu=false
while (($#)); do
  case $1 in
    --quick) reps=1 ;;
    --only) steps=${2:?--only needs a list of steps}; shift ;;
    --cmake-arg) cmake_args+=("${2:?--cmake-arg needs an argument}"); shift ;;
    --results) results=${2:?--results needs a folder}; shift ;;
    --lab) labs+=("${2:?--lab needs a lab number}"); shift ;;
    --no-gpu) no_gpu=true ;;
    *) echo "certify-gpu: unknown argument '$1' (see the header of $0)" >&2; exit 2 ;;
  esac
  shift
done
wants() { [[ ",$steps," == *",$1,"* ]]; }
for s in ${steps//,/ }; do
  case $s in
    deps | build | test | sanitize | bench | verify | calibrate | report) ;;
    *) echo "certify-gpu: unknown step '$s' (deps build test sanitize bench verify calibrate report)" >&2; exit 2 ;;
  esac
done

if $no_gpu; then
  for s in ${steps//,/ }; do
    [[ $s == build || $s == test ]] || { echo "certify-gpu: --no-gpu allows build and test only" >&2; exit 2; }
  done
elif ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "certify-gpu: no GPU visible (nvidia-smi -L failed); nothing to certify" >&2
  exit 2
fi
command -v nvcc >/dev/null || { echo "certify-gpu: nvcc not found: install the CUDA toolkit" >&2; exit 2; }

gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || true)
gpu=${gpu:-no GPU}
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1 || true)
cuda=$(nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')
today=$(date -u +%F)
slug=$(echo "$gpu" | tr '[:upper:]' '[:lower:]' | tr -cs 'a-z0-9' '-' | sed 's/-$//')
work="build/gpu/certify"
report="$results/$today-$slug.md"
mkdir -p "$work" "$results"
# The grader's builds get the same extra configure arguments as ours.
grade_args=(--cmake-arg="-DGTL_PREBUILT_CORE=$root/build/gpu")
for a in "${cmake_args[@]}"; do grade_args+=(--cmake-arg="$a"); done
failed_now=()
# A step's verdict outlives the call: `report` reads them all from here.
verdict() { echo "$2" >"$work/$1.verdict"; [[ $2 == passed ]] || failed_now+=("$1"); }

if wants deps; then
  step "dependencies"
  scripts/install-deps.sh
fi

if wants build; then
  step "configure and build for $gpu (preset gpu: native architectures), what a GPU run needs"
  # Only what the later steps run: the gpu tests (CTest's name of a test is its program's
  # target; `ctest -N` lists them before they are built), the benchmarks, the grader and its
  # report tool, and the core the grader's lab builds import. The CPU and emulated tests are
  # CI's: skipping them leaves about a third of the compile commands, every CUDA file kept.
  gpu_targets() {
    { ctest --test-dir build/gpu -L gpu -N | sed -n 's/^ *Test *#[0-9]*: *//p'
      xargs -r -n1 basename <build/gpu/benchmarks.txt
      printf '%s\n' gtl-grade bench_to_markdown gtl_prebuilt_core; } | sort -u
  }
  { cmake --preset gpu "${cmake_args[@]}" && mapfile -t targets < <(gpu_targets) &&
    echo "certify-gpu: building ${#targets[@]} targets: ${targets[*]}" &&
    cmake --build --preset gpu -j "$jobs" --target "${targets[@]}"; } 2>&1 |
    tee "$work/build.log" | tail -5
  if [[ ${PIPESTATUS[0]} -ne 0 ]]; then
    verdict build failed
    echo "certify-gpu: build failed, see $work/build.log" >&2
    exit 1
  fi
  verdict build passed
fi

if wants test; then
  step "gpu tests"
  ctest --preset gpu -j 1 2>&1 | tee "$work/gpu-tests.log"
  [[ ${PIPESTATUS[0]} -eq 0 ]] && verdict test passed || verdict test failed
fi

if wants sanitize; then
  step "gpu tests under compute-sanitizer (memcheck)"
  sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  : >"$work/sanitizer.log"
  : >"$work/sanitizer.rows"
  clean=passed
  # The kernels students write (labs 01 and 02; the core's kernels run under the emulator's
  # sanitizers in CI, and labs 03-07's GPU tests run the core's), each run bounded.
  mapfile -t gpu_tests < <(ctest --test-dir build/gpu -L gpu -N -V |
    sed -n 's/.*Test command: \([^ ]*\).*/\1/p' | grep -E '/labs/0[12]-')
  for t in "${gpu_tests[@]}"; do
    name=$(basename "$t")
    if timeout 120 "$sanitizer" --tool memcheck --error-exitcode 99 "$t" --gtest_brief=1 \
      >>"$work/sanitizer.log" 2>&1; then
      echo "| $name | clean |" >>"$work/sanitizer.rows"
    else
      echo "| $name | **errors** (see sanitizer log) |" >>"$work/sanitizer.rows"
      clean=failed
    fi
    echo "  memcheck $name: $(tail -1 "$work/sanitizer.log")"
  done
  verdict sanitize "$clean"
fi

if wants bench; then
  step "benchmarks ($reps repetitions, medians)"
  rm -f "$work"/*.json "$work/bench.stopped"
  echo "$reps" >"$work/bench.reps"
  ok=passed
  : >"$work/bench.log"
  # Each program gets at most GTL_BENCH_LIMIT seconds (default 90): Google Benchmark repeats a
  # manually timed benchmark until its timed part reaches --benchmark_min_time, so one whose
  # untimed setup dwarfs the timed part can run for many minutes and take a lease's whole time.
  # A program stopped so keeps the JSON of the benchmarks it finished; the log names the rest.
  limit=${GTL_BENCH_LIMIT:-90}
  while read -r b; do
    [[ -n $b ]] || continue
    # GTL_BENCH_ONLY=REGEX: only the programs whose names match (the others are not run).
    [[ -z ${GTL_BENCH_ONLY:-} || $(basename "$b") =~ $GTL_BENCH_ONLY ]] || continue
    echo "  $(basename "$b")"
    echo "== $(basename "$b")" >>"$work/bench.log"
    timeout -k 5 "$limit" "$b" --benchmark_repetitions="$reps" \
      --benchmark_report_aggregates_only=true --benchmark_min_time=0.2 \
      --benchmark_out="$work/$(basename "$b").json" --benchmark_out_format=json \
      >>"$work/bench.log" 2>&1
    rc=$?
    if ((rc == 124 || rc == 137)); then
      echo "  $(basename "$b"): stopped after ${limit}s; it was running: $(tail -1 "$work/bench.log")"
      echo "| $(basename "$b") | stopped after ${limit}s |" >>"$work/bench.stopped"
      ok=failed
    elif ((rc != 0)); then
      ok=failed
    fi
  done < build/gpu/benchmarks.txt
  verdict bench "$ok"
fi

if wants verify; then
  if ((${#labs[@]})); then
    # One lab's verify at a time: each keeps its own results and verdict, and the logs add up.
    name="verify-$(IFS=-; echo "${labs[*]}")"
    lab_args=()
    for l in "${labs[@]}"; do lab_args+=(--lab "$l"); done
    step "grader verify of lab ${labs[*]}, every check including the GPU ones"
    build/gpu/grader/gtl-grade verify "${grade_args[@]}" "${lab_args[@]}" --out "$work/$name" 2>&1 |
      tee -a "$work/verify.log"
  else
    name=verify
    step "grader verify, every check including the GPU ones"
    build/gpu/grader/gtl-grade verify "${grade_args[@]}" --out "$work/verify" 2>&1 |
      tee "$work/verify.log"
  fi
  [[ ${PIPESTATUS[0]} -eq 0 ]] && verdict "$name" passed || verdict "$name" failed
fi

if wants calibrate; then
  step "grader calibrate: the solution's speedups on $gpu into each lab's calibration.json"
  # Only the speed checks: calibrate stores their figures, the other checks it would only regrade.
  mapfile -t speed_checks < <(awk '/^  - name:/ { n = $3 } /^    type: speed/ { print n }' labs/*/rubric.yaml)
  build/gpu/grader/gtl-grade calibrate "${grade_args[@]}" --checks "${speed_checks[@]}" \
    --out build/gpu/certify/calibrate 2>&1 |
    tee "$work/calibrate.log"
  [[ ${PIPESTATUS[0]} -eq 0 ]] && verdict calibrate passed || verdict calibrate failed
fi

if wants report; then
  step "report"
  summary=""
  for s in build test sanitize bench verify calibrate; do
    if [[ $s == verify ]] && compgen -G "$work/verify-*.verdict" >/dev/null; then
      for v in "$work"/verify-*.verdict; do
        summary+="$(basename "$v" .verdict | sed 's/-/ of lab /') $(cat "$v"); "
      done
      continue
    fi
    [[ -f $work/$s.verdict ]] && summary+="$s $(cat "$work/$s.verdict"); " || summary+="$s not run; "
  done
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
    echo "| steps | ${summary%; } |"
    echo
    echo "## Tests"
    echo
    echo '```'
    [[ -f $work/gpu-tests.log ]] && grep -E "Test +#|tests passed|tests failed" "$work/gpu-tests.log"
    echo '```'
    echo
    echo "## compute-sanitizer memcheck"
    echo
    echo "| test binary | result |"
    echo "|---|---|"
    [[ -f $work/sanitizer.rows ]] && cat "$work/sanitizer.rows"
    echo
    echo "## Grader: verify (solution and starter, the labs the steps name)"
    echo
    echo '```'
    [[ -f $work/verify.log ]] && sed 's/\x1b\[[0-9;]*m//g' "$work/verify.log"
    echo '```'
    echo
    echo "## Grader: calibrate (the solution's speedups, stored in labs/*/calibration.json)"
    echo
    echo '```'
    [[ -f $work/calibrate.log ]] && sed 's/\x1b\[[0-9;]*m//g' "$work/calibrate.log" | grep -v "^gtl-grade \["
    echo '```'
    echo
    echo "## Benchmarks (median of $(cat "$work/bench.reps" 2>/dev/null || echo "?") repetitions)"
    shopt -s nullglob
    json=("$work"/*.json)
    if [[ -f $work/bench.stopped ]]; then
      echo
      echo "Stopped at their time limit (their finished benchmarks are below):"
      echo
      echo "| program | |"
      echo "|---|---|"
      cat "$work/bench.stopped"
    fi
    ((${#json[@]})) && build/gpu/common/tools/bench_to_markdown "${json[@]}"
  } >"$report"
  echo "report: $report"
fi

if ((${#failed_now[@]})); then
  echo "certify-gpu: FAILED: ${failed_now[*]}" >&2
  exit 1
fi
echo "certify-gpu: steps passed: $steps"
