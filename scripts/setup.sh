#!/usr/bin/env bash
# Installs everything the build and the tests need on a Debian 12 machine.
# Idempotent: packages already present are not fetched again.
#   Debian: compilers, Clang/LLVM 19 libTooling, CLI11, GoogleTest, nlohmann-json, cpp-httplib,
#           Boost's headers (Beast: kbserve's WebSocket), python3-dev (libpython: the
#           adapter that runs KernelBench-format ModelNew solutions, lib/pymodel),
#           OpenSSL, libseccomp, libcurl, PCRE2, utf8proc, jq, Chromium (report screenshots)
#   PyPI:   meson, ninja, torch==2.11.0 (LibTorch headers and libraries) and
#           pyarrow (Parquet rows for kbsynth import), and for the Python package's
#           tests pytest, Ray, veRL, OpenRLHF, openenv-core (engines --no-deps) in
#           a virtual environment at $KB_VENV (default /opt/kb-venv)
set -euo pipefail

KB_VENV="${KB_VENV:-/opt/kb-venv}"
TORCH_VERSION="2.11.0"

apt_packages=(
  build-essential pkg-config git jq
  clang-19 libclang-19-dev llvm-19-dev libclang-cpp19-dev
  libcli11-dev libgtest-dev libgmock-dev nlohmann-json3-dev
  libssl-dev libseccomp-dev libcurl4-openssl-dev libpcre2-dev libutf8proc-dev libcpp-httplib-dev libboost-dev
  python3-dev
  chromium
)

missing=()
for p in "${apt_packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]})); then
  echo "setup: installing Debian packages: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [ ! -x "$KB_VENV/bin/python" ]; then
  echo "setup: creating Python environment $KB_VENV"
  python3 -m venv "$KB_VENV"
fi
if ! "$KB_VENV/bin/python" - <<PY 2>/dev/null
import sys, torch, mesonbuild, ninja, pyarrow
sys.exit(0 if torch.__version__.split('+')[0] == "$TORCH_VERSION" else 1)
PY
then
  echo "setup: installing meson, ninja, torch==$TORCH_VERSION from PyPI (large download)"
  "$KB_VENV/bin/pip" install -q --disable-pip-version-check meson ninja "torch==$TORCH_VERSION" numpy pyarrow
fi
# The Python package's tests (python/kbserve, tests/pyserve; docs/kbserve-python.md):
# pytest, httpx (the client), Ray, and the three RL engines, each driven through
# its own code. The engines' declared requirements pull vLLM, DeepSpeed and
# flash-attn (GPU training stacks of several GB), so veRL, OpenRLHF and
# openenv-core are installed --no-deps, next to the few packages their import
# chains need. Pinned together: veRL 0.9.1 wants transformers<5.11 and
# tensordict<=0.10 (OpenRLHF 0.11.2 pins transformers 5.15.0 and ray 2.55.0;
# the parts tested here work with these). About 45 s and 700 MB.
PYSERVE_DEPS=(pytest==9.2.0 httpx==0.29.0 ray==2.60.0 transformers==5.10.4 tensordict==0.10.0
  omegaconf==2.3.1 hydra-core==1.3.8 pyyaml==6.0.4 pillow==13.0.0 codetiming==1.4.0 datasets==5.2.0
  pylatexenc==2.11 aiohttp==3.14.5 requests==2.34.2 fastapi==0.165.0 websockets==17.4 fastmcp==4.2.3)
PYSERVE_ENGINES=(verl==0.9.1 openrlhf==0.11.2 openenv-core==0.3.0)
if ! "$KB_VENV/bin/python" - "${PYSERVE_DEPS[@]}" "${PYSERVE_ENGINES[@]}" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version
sys.exit(0 if all(version(p.split("==")[0]) == p.split("==")[1] for p in sys.argv[1:]) else 1)
PY
then
  echo "setup: installing pytest, Ray, veRL, OpenRLHF, openenv-core (and their import chains) from PyPI"
  "$KB_VENV/bin/pip" install -q --disable-pip-version-check "${PYSERVE_DEPS[@]}"
  "$KB_VENV/bin/pip" install -q --disable-pip-version-check --no-deps "${PYSERVE_ENGINES[@]}"
fi
# The CUDA compiler (kbcheck build compiles .cu with nvcc, also on a machine
# without a GPU): the machine's toolkit at /usr/local/cuda when it has one,
# else NVIDIA's own PyPI packages of the CUDA that torch 2.11 uses (13.0),
# which unpack a toolkit tree (bin/nvcc, include, lib) into the venv. Debian
# 12's nvidia-cuda-toolkit is 11.8, too old for torch's CUDA 13 headers.
# Pinned together: nvcc, its NVVM and its crt headers must be one release.
CUDA_PIN="13.0.88"
if [ ! -x /usr/local/cuda/bin/nvcc ]; then
  cu13="$("$KB_VENV/bin/python" -c 'import site; print(site.getsitepackages()[0])')/nvidia/cu13"
  if ! "$cu13/bin/nvcc" --version 2>/dev/null | grep -q "V$CUDA_PIN"; then
    echo "setup: no /usr/local/cuda: installing nvcc $CUDA_PIN from PyPI into $KB_VENV"
    "$KB_VENV/bin/pip" install -q --disable-pip-version-check "nvidia-cuda-nvcc==$CUDA_PIN" \
      "nvidia-nvvm==$CUDA_PIN" "nvidia-cuda-crt==$CUDA_PIN" "nvidia-cuda-cccl==13.0.85"
  fi
fi
# A missing compiler fails the set-up: tests must not skip what they exist to check.
source "$(dirname "$0")/env.sh"
if ! "$KB_CUDA_DIR/bin/nvcc" --version >/dev/null 2>&1; then
  echo "setup: no usable nvcc at $KB_CUDA_DIR/bin/nvcc" >&2
  exit 1
fi
echo "setup: ready (venv $KB_VENV, CUDA toolkit $KB_CUDA_DIR)"
