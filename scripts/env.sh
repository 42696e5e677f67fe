# Sourced by the scripts: where the environment and the build live.
KB_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
KB_VENV="${KB_VENV:-/opt/kb-venv}"
KB_BUILD="${KB_BUILD:-$KB_ROOT/build}"
export PATH="$KB_VENV/bin:$PATH"

# Configures (once) and builds $KB_BUILD.
kb_build() {
  if [ ! -f "$KB_BUILD/build.ninja" ]; then
    meson setup "$KB_BUILD" "$KB_ROOT" "$@"
  fi
  meson compile -C "$KB_BUILD"
}
