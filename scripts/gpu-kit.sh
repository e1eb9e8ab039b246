#!/usr/bin/env bash
# The GPU kit: certifies the course on a lent GPU machine that has the CUDA toolkit, a compiler,
# CMake and ninja but no package manager and no network, in two calls of a few minutes each.
#
#   scripts/gpu-kit.sh pack              here (Debian, with its package registry): downloads the
#                                        packages of scripts/gpu-kit.packages into .gpu-kit/debs
#                                        (downloads only, installs nothing) and prints the two
#                                        calls to make on the GPU machine
#   scripts/gpu-kit.sh run 1 [OUT]       there: probe, unpack, configure, build, the gpu tests,
#                                        a first report
#   scripts/gpu-kit.sh run 2 [OUT]       there: compute-sanitizer, calibrate, benchmarks, verify
#                                        lab by lab (GTL_KIT_VERIFY_LABS="05 08": those only), the
#                                        gpu tests if call 1 did not finish them, the report
#                                        (after rebuilding, on a fresh machine)
#   scripts/gpu-kit.sh run all [OUT]     both
#   scripts/gpu-kit.sh run 1 OUT --no-gpu   (the rehearsal, scripts/gpu-kit-rehearse.sh: stops
#                                        before anything needs a GPU)
#   scripts/gpu-kit.sh exec CMD...       runs CMD in the kit's environment (a test by hand)
#
# GTL_KIT_SKIP="calibrate benchmarks" leaves those steps out (a lease spent on what changed since
# the last report); GTL_BENCH_ONLY=REGEX runs only the benchmark programs whose names match.
#
# OUT (default $OUT, else build/gpu/kit-out) receives at most 8 files: the report
# (<date>-<gpu>.md), the benchmarks' and the grader's JSON (verify's, one per lab, in
# verify-solution.tar.gz), the labs' calibration.json and the log. Every step is timed and
# leaves a marker in build/gpu/kit, so a call that is cut short resumes where it stopped; call 2
# on the machine call 1 warmed reuses its build, and on a fresh machine rebuilds it first. Each
# call stops starting steps near its deadline (GTL_KIT_DEADLINE, default 540 s) and refreshes OUT
# after every step, so even a call killed at the device's 600 s limit returns its log.
# The packages are unpacked into build/gpu/kit/prefix with dpkg-deb -x, never over /.
set -euo pipefail
source "$(dirname "$0")/common.sh"
cd "$root"

kit=.gpu-kit                  # what pack downloads (ignored by git, carried to the GPU machine)
state=build/gpu/kit           # markers, the prefix, the log
prefix=$state/prefix
multiarch=x86_64-linux-gnu

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

# ---- pack ---------------------------------------------------------------------------------------

packages() { sed 's/#.*//' scripts/gpu-kit.packages | awk 'NF { print $1 }'; }

# Every Depends of every carried package (the first of alternatives, or any of them) must be
# carried, or named on the list's `# assumed:` or `# not-needed:` line: a dependency Debian adds
# later would otherwise be missing on the lent machine while the rehearsal here, which hides only
# the kit's own packages, still passed with the system's copy.
check_dependencies() {
  local -A known=()
  local p group alt found problems=0
  for p in $(packages) $(sed -n 's/^# \(assumed\|not-needed\): //p' scripts/gpu-kit.packages); do known[$p]=1; done
  for p in $(packages); do
    while read -r group; do
      found=0
      for alt in ${group//|/ }; do [[ -n ${known[$alt]:-} ]] && found=1; done
      ((found)) || { echo "[kit] $p depends on $group: carry it, or name it on '# assumed:' or '# not-needed:'" >&2; problems=1; }
    done < <(apt-cache depends --no-recommends --no-suggests --no-conflicts --no-breaks \
      --no-replaces --no-enhances "$p" | awk '
        /^ *\|?(Pre)?Depends:/ {
          name = $2; gsub(/[<>]/, "", name); group = (pending == "" ? name : pending "|" name)
          if ($1 ~ /^\|/) pending = group; else { print group; pending = "" }
        }')
  done
  return "$problems"
}

pack() {
  check_dependencies || { echo "[kit] scripts/gpu-kit.packages misses dependencies (above)" >&2; return 1; }
  mkdir -p "$kit/debs"
  rm -f "$kit"/debs/*.deb
  mapfile -t wanted < <(packages)
  echo "[kit] downloading ${#wanted[@]} packages into $kit/debs"
  (cd "$kit/debs" && apt-get download -q "${wanted[@]}")
  # The exact versions carried, for the report.
  for d in "$kit"/debs/*.deb; do echo "$(dpkg-deb -f "$d" Package) $(dpkg-deb -f "$d" Version)"; done \
    >"$kit/manifest.txt"
  local missing
  missing=$(comm -23 <(printf '%s\n' "${wanted[@]}" | sort -u) <(cut -d' ' -f1 "$kit/manifest.txt" | sort -u))
  [[ -z $missing ]] || { echo "[kit] not downloaded: $missing" >&2; return 1; }
  local tree_bytes kit_bytes
  tree_bytes=$(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
  kit_bytes=$(du -cb "$kit"/debs/*.deb | tail -1 | cut -f1)
  echo "[kit] $(wc -l <"$kit/manifest.txt") packages, $((kit_bytes / 1024 / 1024)) MiB;" \
    "with the tracked tree ($((tree_bytes / 1024 / 1024)) MiB): $(((kit_bytes + tree_bytes) / 1024 / 1024)) MiB of the 64 MiB a call carries"
  cat <<EOF
[kit] on the GPU machine, two calls (device tool: carry [".gpu-kit"], timeout 600 s each):
  call 1:  GTL_KIT_DEADLINE=420 scripts/gpu-kit.sh run 1 \$OUT
           # probe, unpack, configure, build, gpu tests, a first report
  call 2:  GTL_KIT_DEADLINE=D scripts/gpu-kit.sh run 2 \$OUT
           # sanitizer, verify, calibrate, benchmarks, report; D = the device's budget_left_s
           # (status) less 60, at most 540: the session's device time ends the call otherwise
Then commit the report from OUT under docs/results/ (docs/contributing.md, "When a GPU is lent").
EOF
}

# ---- run ----------------------------------------------------------------------------------------

log() { echo "[kit $(date -u +%T)] $*" | tee -a "$state/kit.log"; }

# Runs step $1 (a function) once: a marker records that it passed, with its seconds. Each call
# has a deadline (GTL_KIT_DEADLINE seconds after the call started, default 540: the device call
# is killed at 600 s, and its $OUT must be written before): a step is not started with under
# 40 s left (the report: 10 s), and one still running 20 s before the deadline is stopped
# (timeout signals its whole process group), so the report still runs, the call ends with its
# files in OUT and the next call resumes at that step.
run_step() {
  local name=$1 start=$SECONDS left
  if [[ -f $state/$name.done ]]; then
    log "$name: done before ($(cat "$state/$name.done")), skipped"
    return 0
  fi
  left=$((deadline - SECONDS))
  # The report takes seconds and says what every step did: it still runs with 10 s left.
  local need=40
  [[ $name == report ]] && need=10
  if ((left < need)); then
    log "$name: NOT STARTED, ${left}s left before this call's deadline: the next call resumes here"
    return 1
  fi
  log "$name: start (${left}s left before the deadline)"
  # A step is stopped 20 s before the deadline, so the report still runs after it (a report cut
  # short loses the call's whole summary); the report itself may run to 5 s before it.
  local reserve=20
  [[ $name == report ]] && reserve=5
  if timeout -k 5 $((left > reserve + 10 ? left - reserve : 10)) "$root/scripts/gpu-kit.sh" _step "$name" 2>&1 |
    tee -a "$state/kit.log"; then
    echo "$(elapsed $((SECONDS - start)))" >"$state/$name.done"
    log "$name: passed in $(elapsed $((SECONDS - start)))"
  else
    log "$name: FAILED after $(elapsed $((SECONDS - start)))$( ((SECONDS - start >= left - reserve - 5)) && echo ', stopped at the deadline')"
    return 1
  fi
}

# The first directory among $@ that holds file $1 (searching each recursively, shallowly).
find_file() {
  local name=$1; shift
  local d
  for d in "$@"; do
    [[ -d $d ]] || continue
    find "$d/" -maxdepth 4 -name "$name" -print -quit 2>/dev/null
  done | head -1
}

# Where the machine's Python wheels (PyTorch's cuDNN and NCCL) keep their libraries.
wheel_roots() {
  local py
  for py in /opt/torch/.venv/bin/python3 python3; do
    command -v "$py" >/dev/null 2>&1 || continue
    "$py" -c 'import site, sys; print("\n".join(site.getsitepackages()))' 2>/dev/null || true
  done | sed 's|$|/nvidia|' | sort -u
}

probe() {
  echo "== machine"
  echo "os: $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME") ($(uname -r))"
  echo "glibc: $(ldd --version 2>/dev/null | head -1)"
  echo "cores: $(nproc), memory: $(free -g | awk '/Mem:/{print $2}') GiB"
  echo "c++: $(c++ --version 2>/dev/null | head -1 || echo none)"
  echo "cmake: $(cmake --version 2>/dev/null | head -1 || echo none); ninja: $(ninja --version 2>/dev/null || echo none)"
  echo "nvcc: $(nvcc --version 2>/dev/null | tail -1 || echo none)"
  echo "gpu: $(nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv,noheader 2>/dev/null || echo none)"
  echo "compute-sanitizer: $(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || echo none)"
  echo "== CUDA libraries"
  local roots=(/usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/lib/$multiarch)
  mapfile -t wheels < <(wheel_roots)
  echo "cublas: $(find_file 'libcublas.so*' "${roots[@]}")"
  echo "cudnn: header $(find_file cudnn.h /usr/include /usr/local/cuda/include "${wheels[@]}"), library $(find_file 'libcudnn.so*' "${roots[@]}" "${wheels[@]}")"
  echo "nccl: header $(find_file nccl.h /usr/include /usr/local/cuda/include "${wheels[@]}"), library $(find_file 'libnccl.so*' "${roots[@]}" "${wheels[@]}")"
  echo "python wheels searched: ${wheels[*]:-none}"
  echo "== the kit"
  if [[ -f $kit/manifest.txt ]]; then
    echo "$(wc -l <"$kit/manifest.txt") packages: $(cut -d' ' -f1,2 "$kit/manifest.txt" | paste -sd, | cut -c1-400)..."
  else
    echo "no $kit/manifest.txt: run 'scripts/gpu-kit.sh pack' where a package registry is reachable" >&2
    return 1
  fi
  echo "system copies of what the kit carries (the kit's win, from its prefix):"
  local h
  for h in gtest/gtest.h benchmark/benchmark.h yaml-cpp/yaml.h CLI/CLI.hpp nlohmann/json.hpp \
    openmpi/include/mpi.h openblas-pthread/cblas.h; do
    if [[ -e /usr/include/$h || -e /usr/include/$multiarch/$h || -e /usr/lib/$multiarch/$h ]]; then echo "  $h: present"; else echo "  $h: absent"; fi
  done
}

unpack() {
  rm -rf "$prefix"
  mkdir -p "$prefix"
  local d
  for d in "$kit"/debs/*.deb; do
    if command -v dpkg-deb >/dev/null; then
      dpkg-deb -x "$d" "$prefix"
    else  # a .deb is an ar archive holding data.tar.*
      (cd "$prefix" && ar p "$root/$d" "$(ar t "$root/$d" | grep '^data\.tar')" | tar -x -a -f - 2>/dev/null ||
        ar p "$root/$d" "$(ar t "$root/$d" | grep '^data\.tar')" | tar -xJ)
    fi
  done
  # What the packages' postinst scripts would have made: the alternatives links of OpenBLAS and
  # OpenMPI (mpirun, mpicxx, ... are links to their .openmpi programs).
  local ob=$prefix/usr/lib/$multiarch/openblas-pthread
  [[ -e $ob/libopenblas.so.0 ]] && ln -sf openblas-pthread/libopenblas.so.0 "$prefix/usr/lib/$multiarch/libopenblas.so.0"
  local tool
  for tool in mpirun mpiexec mpicc mpicxx mpic++; do
    [[ -e $prefix/usr/bin/$tool.openmpi ]] && ln -sf "$tool.openmpi" "$prefix/usr/bin/$tool"
  done
  echo "unpacked $(ls "$kit"/debs/*.deb | wc -l) packages into $prefix ($(du -sh "$prefix" | cut -f1))"
  runtime_libraries
}

# The folder of links that LD_LIBRARY_PATH gets (kit_environment): one per shared library of the
# kit that this machine lacks. A library it has (ldconfig knows it, and the file is not empty)
# stays the machine's: a Debian 12 copy of it first on the path would shadow a newer one for
# every program the steps run, nvidia-smi, nvcc and compute-sanitizer included. OpenMPI's own
# libraries always come from the kit, to match its mpirun and plugins. Some packages install
# under lib/ rather than usr/lib/ (libnl-3), so both are searched.
runtime_libraries() {
  local runlib=$state/runlib so name sys own=()
  rm -rf "$runlib" && mkdir -p "$runlib"
  for so in "$prefix"/usr/lib/$multiarch/*.so.* "$prefix"/lib/$multiarch/*.so.*; do
    name=$(basename "$so")
    # The sonames (libfoo.so.1, libbenchmark.so.1debian), not the files (libfoo.so.1.2.3).
    [[ $name =~ \.so\.[0-9][0-9a-z]*$ ]] || continue
    sys=$(ldconfig -p 2>/dev/null | awk -v n="$name" '$1 == n && /x86-64/ { print $NF; exit }')
    if [[ -n $sys && -s $sys && ! $name =~ ^lib(mpi|open-pal|open-rte|oshmem|ompitrace|mca_) ]]; then
      own+=("$name")
    else
      ln -sf "$root/$so" "$runlib/$name"
    fi
  done
  echo "shared libraries from the kit: $(ls "$runlib" | tr '\n' ' ')"
  echo "the machine's own (not shadowed): ${own[*]:-none}"
}

# The environment every later step runs in: the prefix's programs first, the kit's libraries this
# machine lacks (runtime_libraries), OpenMPI told where it was moved to.
kit_environment() {
  local p=$root/$prefix
  export PATH="$p/usr/bin:$PATH"
  export LD_LIBRARY_PATH="$root/$state/runlib:$p/usr/lib/$multiarch/openmpi/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export OPAL_PREFIX="$p/usr" OPAL_LIBDIR="$p/usr/lib/$multiarch/openmpi/lib"
  export OPAL_DATADIR="$p/usr/share/openmpi" OPAL_PKGDATADIR="$p/usr/share/openmpi"
  export OPAL_INCLUDEDIR="$p/usr/lib/$multiarch/openmpi/include"
  export OPAL_SYSCONFDIR="$p/etc/openmpi"
  local wheels=()
  mapfile -t wheels < <(wheel_roots)
  for w in "${wheels[@]}"; do
    for lib in cudnn nccl; do
      [[ -d $w/$lib/lib ]] && LD_LIBRARY_PATH="$w/$lib/lib:$LD_LIBRARY_PATH"
    done
  done
  export LD_LIBRARY_PATH
}

# The configure arguments: CMake finds every kit package in the prefix, cuDNN and NCCL where the
# probe found them, MPI only if the kit's mpirun works here.
cmake_arguments() {
  local p=$root/$prefix arch="${GTL_KIT_ARCH:-}"
  if [[ -z $arch ]]; then
    arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '.')
  fi
  args=(
    "-DCMAKE_PREFIX_PATH=$p/usr;$p/usr/lib/$multiarch/cmake;$p/usr/share/cmake"
    "-DCMAKE_INCLUDE_PATH=$p/usr/include;$p/usr/include/$multiarch/openblas-pthread"
    "-DCMAKE_LIBRARY_PATH=$p/usr/lib/$multiarch;$p/usr/lib/$multiarch/openblas-pthread"
    "-DCMAKE_CUDA_ARCHITECTURES=${arch:-90}"
  )
  local wheels=() cudnn_h cudnn_l nccl_h nccl_l
  mapfile -t wheels < <(wheel_roots)
  cudnn_h=$(find_file cudnn.h /usr/include /usr/local/cuda/include "${wheels[@]}")
  cudnn_l=$(find_file 'libcudnn.so*' /usr/local/cuda/lib64 /usr/lib/$multiarch "${wheels[@]}")
  nccl_h=$(find_file nccl.h /usr/include /usr/local/cuda/include "${wheels[@]}")
  nccl_l=$(find_file 'libnccl.so*' /usr/local/cuda/lib64 /usr/lib/$multiarch "${wheels[@]}")
  [[ -n $cudnn_h && -n $cudnn_l ]] &&
    args+=("-DGTL_CUDNN_INCLUDE=$(dirname "$cudnn_h")" "-DGTL_CUDNN_LIB=$cudnn_l")
  [[ -n $nccl_h && -n $nccl_l ]] &&
    args+=("-DGTL_NCCL_INCLUDE=$(dirname "$nccl_h")" "-DGTL_NCCL_LIB=$nccl_l")
  # Decided once per machine (every step, and the grader's builds, must configure alike, or the
  # grader would not import this build's core and would compile its own).
  if [[ ! -f $state/mpi ]]; then
    if mpirun --allow-run-as-root --oversubscribe -np 1 true >/dev/null 2>&1; then
      echo on >"$state/mpi"
    else
      echo off >"$state/mpi"
    fi
  fi
  if [[ $(cat "$state/mpi") == on ]]; then
    args+=("-DMPI_CXX_COMPILER=$p/usr/bin/mpicxx" "-DMPIEXEC_EXECUTABLE=$p/usr/bin/mpiexec")
  else
    echo "[kit] the kit's mpirun does not run here: MPI off (its checks report themselves skipped)" >&2
    args+=("-DGTL_WITH_MPI=OFF")
  fi
}

certify() {
  local args=()
  cmake_arguments
  local pass=()
  for a in "${args[@]}"; do pass+=(--cmake-arg "$a"); done
  # --quick: one benchmark repetition, so that call 2 fits its minutes.
  scripts/certify-gpu.sh --quick --only "$1" --results "$state/results" "${pass[@]}" "${@:2}"
}

build_course() { certify build; }
gpu_tests() { certify test; }
sanitize() { certify sanitize; }
benchmarks() { certify bench; }
# verify_NN: lab NN's verify, one step per lab, so that a call cut at its deadline loses one lab's
# minute, not the whole course's seven, and the next call goes on with the next lab.
verify_lab() { certify verify --lab "$1"; }
# calibrate writes the labs' calibration.json in the tree, which the next call's carried tree
# replaces: its figures are kept in the state directory, for every later call to return.
calibrate() {
  certify calibrate || return 1
  find labs -name calibration.json -newer "$state/unpack.done" -print0 |
    tar -czf "$state/calibration.tar.gz" --null -T -
}
report() { certify report; }

# Without a GPU (the rehearsal): call 1's build and test steps exactly, for sm_90; the gpu tests
# skip without a device, but each binary must start: its libraries resolve. Then the MPI tests run
# for real (CPU tests, built here for this alone): the kit's relocated OpenMPI starts ranks.
build_without_gpu() {
  GTL_KIT_ARCH=${GTL_KIT_ARCH:-90} certify build,test --no-gpu || return 1
  local all t tests=() targets=()
  all=$(ninja -C build/gpu -t targets all)
  mapfile -t tests < <(ctest --test-dir build/gpu -N -R mpi | sed -n 's/^ *Test *#[0-9]*: *//p')
  for t in "${tests[@]}"; do grep -q "^$t: " <<<"$all" && targets+=("$t"); done
  ((${#targets[@]})) || { echo "no MPI tests here (MPI off): nothing more to run"; return 0; }
  cmake --build build/gpu -j "$jobs" --target "${targets[@]}" | tail -2 &&
    ctest --test-dir build/gpu -R mpi -j "$jobs" 2>&1 | tail -3
}

# At most 8 files into OUT: the report, the benchmarks' JSON merged per program (as many as fit),
# the grader's results, the log.
collect() {
  local out=$1
  mkdir -p "$out"
  shopt -s nullglob
  local reports=("$state"/results/*.md)
  ((${#reports[@]})) && cp "${reports[@]}" "$out/"
  local verified=(build/gpu/certify/verify-*/solution/results.json)
  ((${#verified[@]})) && tar -czf "$out/verify-solution.tar.gz" "${verified[@]}"
  [[ -f build/gpu/certify/calibrate/results.json ]] &&
    cp build/gpu/certify/calibrate/results.json "$out/calibrate.json"
  local benches=(build/gpu/certify/*.json)
  if ((${#benches[@]})); then
    tar -czf "$out/benchmarks.tar.gz" -C build/gpu/certify "${benches[@]##*/}"
  fi
  [[ -f $state/calibration.tar.gz ]] && cp "$state/calibration.tar.gz" "$out/calibration.tar.gz"
  cp "$state/kit.log" "$out/kit.log"
}

run() {
  local call=${1:?run needs 1, 2 or all}
  local out=${2:-${OUT:-build/gpu/kit-out}}
  local no_gpu=false
  [[ ${3:-} == --no-gpu ]] && no_gpu=true
  mkdir -p "$state" "$out"
  deadline=${GTL_KIT_DEADLINE:-540}
  log "call $call on $(hostname), $(nproc) cores, deadline ${deadline}s"
  local steps=() verify_steps=() lab
  # GTL_KIT_VERIFY_LABS="05 08" verifies those labs only (a lease too short for all of them:
  # the labs the last report did not reach).
  for lab in ${GTL_KIT_VERIFY_LABS:-$(ls -d labs/[0-9][0-9]-* | sed 's|labs/\([0-9]*\)-.*|\1|')}; do
    verify_steps+=("verify_$lab")
  done
  if $no_gpu; then
    steps=(build_without_gpu)
  else
    case $call in
      1) steps=(build_course gpu_tests report) ;;
      # A fresh machine lost call 1's build: build_course makes it again (its marker went too).
      # gpu_tests last: skipped when call 1 finished them, else (call 1 cut at its deadline, or a
      # fresh machine) run with whatever time is left.
      # Calibrate and the benchmarks before verify: they give the figures the handouts and the
      # speed bars need, in five minutes; verify of every lab (solution and starter) takes over
      # eight, more than one call has, so it runs a lab per step with whatever time is left.
      2) steps=(build_course sanitize calibrate benchmarks "${verify_steps[@]}" gpu_tests report) ;;
      all) steps=(build_course gpu_tests sanitize calibrate benchmarks "${verify_steps[@]}" report) ;;
      *) usage >&2; return 2 ;;
    esac
  fi
  local ok=0 s
  # The report is written again by every call that reaches it, from every step run so far.
  rm -f "$state/report.done"
  for s in probe unpack "${steps[@]}"; do
    if [[ " ${GTL_KIT_SKIP:-} " == *" $s "* ]]; then
      log "$s: skipped (GTL_KIT_SKIP)"
      continue
    fi
    if ! run_step "$s"; then
      ok=1
      # Nothing runs without the packages or the build.
      [[ $s == probe || $s == unpack || $s == build_course || $s == build_without_gpu ]] && break
    fi
    [[ $s == unpack ]] && kit_environment
    # OUT holds the latest of everything after every step: a call killed at its limit still
    # returns what it had done.
    collect "$out"
  done
  collect "$out"
  log "call $call: $([[ $ok == 0 ]] && echo passed || echo 'a step FAILED') (files in $out)"
  return $ok
}

case ${1:-} in
  pack) pack ;;
  # run_step runs each step as its own process, so that timeout can stop it.
  _step) if [[ $2 == verify_* ]]; then verify_lab "${2#verify_}"; else "$2"; fi ;;
  run) shift; run "$@" ;;
  exec) shift; kit_environment; exec "$@" ;;
  -h | --help | "") usage ;;
  *) usage >&2; exit 2 ;;
esac
