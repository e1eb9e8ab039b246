#!/usr/bin/env bash
# Rehearses the GPU kit here, without a GPU: packs it, then runs its first call up to where a GPU
# is needed (probe, unpack, configure, build for sm_90, the gpu test binaries start and skip)
# inside a bubblewrap sandbox in which every file this machine's copies of the kit's packages
# installed is replaced by an empty device: the build can only succeed from the kit's prefix.
# Run by hand before a submission that touches the kit or the dependencies (it downloads, so CI
# does not run it; CI checks the package list statically, scripts/tests/gpu_kit_packages.sh).
#
#   scripts/gpu-kit-rehearse.sh        (about 10 min on 2 cores; times every step)
#
# It ends with the proof: the CMake cache and the built programs' libraries, which must all come
# from build/gpu/kit/prefix, and the step times, scaled to the lent machine's 16 cores.
set -euo pipefail
source "$(dirname "$0")/common.sh"
cd "$root"
command -v bwrap >/dev/null || { echo "rehearse: bubblewrap is missing (scripts/install-deps.sh)" >&2; exit 2; }

step "pack"
scripts/gpu-kit.sh pack

step "hide this machine's copies of the kit's packages"
hide=()
hidden=0
while read -r pkg _; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || continue
  while read -r f; do
    [[ -e $f && ! -d $f ]] || continue  # a file that exists (a link: where it leads)
    hide+=(--ro-bind /dev/null "$f")
    hidden=$((hidden + 1))
  done < <(dpkg -L "$pkg")
done <.gpu-kit/manifest.txt
echo "hidden: $hidden files of the kit's packages installed here"

step "call 1 in the sandbox, up to where a GPU is needed"
rm -rf build/gpu
start=$SECONDS
# The device call's deadline does not apply here: a 2-core build takes longer than a lent call.
export GTL_KIT_DEADLINE=${GTL_KIT_DEADLINE:-86400}
bwrap --ro-bind / / --bind "$root" "$root" --tmpfs /tmp --dev /dev --proc /proc "${hide[@]}" \
  --chdir "$root" -- scripts/gpu-kit.sh run 1 build/gpu/kit-out --no-gpu
call1=$((SECONDS - start))

step "proof: nothing came from the system's copies"
leaks=$(grep -E '^[A-Za-z_]+(:[A-Z]+)?=/usr/(include|lib)' build/gpu/CMakeCache.txt |
  grep -E 'gtest|gmock|benchmark|yaml|CLI|nlohmann|openblas|blas|cblas|mpi' | grep -v "$root" || true)
if [[ -n $leaks ]]; then
  echo "the CMake cache points at system copies:"; echo "$leaks"; exit 1
fi
echo "CMake cache: every kit dependency found under build/gpu/kit/prefix:"
grep -E '^(GTest_DIR|benchmark_DIR|yaml-cpp_DIR|nlohmann_json_DIR|GTL_CLI11_INCLUDE|BLAS_[a-z]*_LIBRARY|GTL_CBLAS_INCLUDE|MPI_CXX_COMPILER|GTL_HAVE_MPI)[:=]' build/gpu/CMakeCache.txt || true
# Every header the compiler read (ninja's record of them): none from the system's copies.
from_system=$(ninja -C build/gpu -t deps | grep -cE '^ +/usr/include/(gtest|gmock|benchmark|yaml-cpp|CLI|nlohmann|x86_64-linux-gnu/(openblas|cblas|openmpi))' || true)
from_kit=$(ninja -C build/gpu -t deps | grep -c "^ *$root/build/gpu/kit/prefix" || true)
echo "headers read: $from_kit from the kit's prefix, $from_system from the system's copies"
((from_system == 0 && from_kit > 0)) || { echo "rehearse: headers did not come from the kit alone" >&2; exit 1; }
# Call 1 builds only what the GPU run needs (certify-gpu.sh): a gpu test and a benchmark. The
# libraries they load in the sandbox, with the kit's environment, must all be the kit's.
sandbox=(bwrap --ro-bind / / --bind "$root" "$root" --tmpfs /tmp --dev /dev --proc /proc "${hide[@]}" --chdir "$root" --)
libs=$("${sandbox[@]}" bash -c 'for b in build/gpu/labs/05-data-parallel/lab05_gpu_test build/gpu/common/bench/ops/ops_gemm_bench; do
    scripts/gpu-kit.sh exec ldd "$b"; done' | grep -E 'yaml|openblas|benchmark|mpi|gfortran|gtest' || true)
echo "in the sandbox, with the kit's environment, a gpu test and a benchmark load:"
echo "$libs"
if [[ -z $libs ]] || grep -v "$root/build/gpu/kit" <<<"$libs" | grep -q .; then
  echo "rehearse: a built program loads a library that is not the kit's" >&2
  exit 1
fi
echo "the MPI tests in the sandbox, with the kit's relocated OpenMPI:"
"${sandbox[@]}" scripts/gpu-kit.sh exec ctest --test-dir build/gpu -R mpi 2>&1 | tail -4

step "timing"
echo "call 1 (its gpu tests skipping without a GPU) took $(elapsed $call1) on $(nproc) cores (kit.log has each step)"
grep -E 'passed in|FAILED' build/gpu/kit/kit.log || true
