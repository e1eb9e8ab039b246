#!/usr/bin/env bash
# Installs the Debian packages the course needs, only those that are missing (idempotent).
# The CUDA toolkit (nvcc, cuBLAS, cuDNN, NCCL) is not a Debian package here: when it is absent
# the course builds its CPU backend only, and says so in the configure summary.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config
  libgtest-dev libgmock-dev libbenchmark-dev
  libopenblas-dev nlohmann-json3-dev libcli11-dev libyaml-cpp-dev
  libopenmpi-dev openmpi-bin
  bubblewrap
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  echo "[deps] all ${#packages[@]} Debian packages present"
else
  echo "[deps] installing: ${missing[*]}"
  sudo_cmd=()
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { echo "[deps] error: not root and no sudo; install: ${missing[*]}" >&2; exit 1; }
    sudo_cmd=(sudo)
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

nvcc_path="$(command -v nvcc || true)"
[[ -z "$nvcc_path" && -x /usr/local/cuda/bin/nvcc ]] && nvcc_path=/usr/local/cuda/bin/nvcc
if [[ -n "$nvcc_path" ]]; then
  echo "[deps] CUDA toolkit: $("$nvcc_path" --version | tail -1) ($nvcc_path)"
else
  echo "[deps] CUDA toolkit: not found (CPU-only build; install the CUDA toolkit for the GPU backend)"
fi
