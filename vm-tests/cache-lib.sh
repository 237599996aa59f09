# The vm-tests' download cache, shared by the scripts that fetch into it
# (fetch-kernel.sh, fetch-busybox.sh). Sourced; defines cache_dir.
# env: VM_CACHE (default /var/cache/sluice-vm, or ~/.cache/sluice-vm if that
#      is not writable).

# Prints the cache directory, creating it.
cache_dir() {
  local c=${VM_CACHE:-/var/cache/sluice-vm}
  if ! mkdir -p "$c" 2>/dev/null || [ ! -w "$c" ]; then
    [ -n "${VM_CACHE:-}" ] && { echo "vm-tests: VM_CACHE=$c is not writable" >&2; exit 1; }
    c=${XDG_CACHE_HOME:-$HOME/.cache}/sluice-vm
    mkdir -p "$c"
  fi
  echo "$c"
}
