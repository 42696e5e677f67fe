# Sourced by the scripts: where the environment and the build live.
KB_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
KB_VENV="${KB_VENV:-/opt/kb-venv}"
KB_BUILD="${KB_BUILD:-$KB_ROOT/build}"
export PATH="$KB_VENV/bin:$PATH"
# The CUDA toolkit: the machine's, else the one setup.sh put in the venv.
if [ -z "${KB_CUDA_DIR:-}" ]; then
  KB_CUDA_DIR=/usr/local/cuda
  if [ ! -x "$KB_CUDA_DIR/bin/nvcc" ] && [ -x "$KB_VENV/bin/python" ]; then
    KB_CUDA_DIR="$("$KB_VENV/bin/python" -c 'import site; print(site.getsitepackages()[0])')/nvidia/cu13"
  fi
fi

# Configures (once) and builds $KB_BUILD.
kb_build() {
  if [ ! -f "$KB_BUILD/build.ninja" ]; then
    meson setup "$KB_BUILD" "$KB_ROOT" -Dtoolkit_dir="$KB_CUDA_DIR" "$@"
  fi
  meson compile -C "$KB_BUILD"
}
