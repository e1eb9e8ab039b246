# Shared by the course's scripts: where things are and how progress is printed.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
jobs="${GTL_JOBS:-$(nproc)}"
step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
# nvcc is often installed but not on PATH (/usr/local/cuda/bin): let CMake find it.
if ! command -v nvcc >/dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
