# Shared by the course's scripts: where things are and how progress is printed.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
jobs="${GTL_JOBS:-$(nproc)}"

# Seconds as "42s" or "3m05s".
elapsed() { local s=$1; if ((s < 60)); then printf '%ds' "$s"; else printf '%dm%02ds' $((s / 60)) $((s % 60)); fi; }

# step "name" ends the step before it (printing how long it took) and starts the next one; the
# last step ends when the script exits, whether it succeeded or not.
step_name=""
step_start=$SECONDS
step_done() {
  if [[ -n "$step_name" ]]; then
    printf '\033[2m    %s: %s\033[0m\n' "$step_name" "$(elapsed $((SECONDS - step_start)))"
    step_name=""
  fi
}
step() {
  step_done
  step_name="$*"
  step_start=$SECONDS
  printf '\n\033[1m==> %s\033[0m\n' "$*"
}
trap step_done EXIT

# nvcc is often installed but not on PATH (/usr/local/cuda/bin): let CMake find it.
if ! command -v nvcc >/dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
