#!/usr/bin/env bash
# CI's static check of the GPU kit (scripts/gpu-kit.sh): its package list and install-deps.sh
# agree, without downloading anything.
#   - every package install-deps.sh installs is carried by the kit, or named on the kit list's
#     "not-carried:" line (the lent machine's own toolchain);
#   - every -dev package the kit carries is one install-deps.sh installs, or says which of those
#     it comes with ("# via <package>"), so the GPU build never uses a library CI never built with.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
kit_list=$root/scripts/gpu-kit.packages

mapfile -t deps < <(sed -n '/^packages=(/,/^)/p' "$root/scripts/install-deps.sh" |
  sed 's/packages=(//; s/)//; s/#.*//' | tr ' ' '\n' | awk 'NF')
mapfile -t kit < <(sed 's/#.*//' "$kit_list" | awk 'NF { print $1 }')
mapfile -t not_carried < <(sed -n 's/^# not-carried: //p' "$kit_list" | tr ' ' '\n' | awk 'NF')
((${#deps[@]} > 5)) || { echo "could not read install-deps.sh's packages (${#deps[@]})"; exit 1; }
((${#kit[@]} > 5)) || { echo "could not read $kit_list (${#kit[@]} packages)"; exit 1; }

in_list() { local x=$1; shift; local y; for y; do [[ $x == "$y" ]] && return 0; done; return 1; }
problems=0
for p in "${deps[@]}"; do
  if ! in_list "$p" "${kit[@]}" && ! in_list "$p" "${not_carried[@]}"; then
    echo "install-deps.sh installs $p, which the GPU kit neither carries nor names as not carried"
    problems=$((problems + 1))
  fi
done
for p in "${kit[@]}"; do
  [[ $p == *-dev ]] || continue
  in_list "$p" "${deps[@]}" && continue
  via=$(grep -E "^$p[[:space:]]+# via " "$kit_list" | sed 's/.*# via \([^ ]*\).*/\1/' || true)
  if [[ -z $via ]] || ! in_list "$via" "${deps[@]}"; then
    echo "the GPU kit carries $p, which install-deps.sh does not install (nor says '# via' one it does)"
    problems=$((problems + 1))
  fi
done
if ((problems)); then
  echo "FAILED: scripts/gpu-kit.packages and scripts/install-deps.sh disagree ($problems)"
  exit 1
fi
echo "gpu-kit packages: ${#kit[@]} carried, ${#not_carried[@]} not carried; install-deps.sh's ${#deps[@]} all accounted for"
