#!/usr/bin/env bash
# Configures and builds on the GPU machine (Ubuntu, CUDA 13.0, torch 2.11.0
# +cu130 at /opt/torch/.venv, no Clang, no Debian packages): Clang checker
# off, libtorch_cuda linked, carried dependencies from .carry/ (made here by
# scripts/gpu/carry.sh). Usage: bash scripts/gpu/build.sh [BUILD_DIR [TARGET...]]
# (no targets: everything).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="${1:-$ROOT/build-gpu}"
[ $# -gt 0 ] && shift
export PKG_CONFIG_PATH="$ROOT/.carry/lib/pkgconfig"
export PATH="$ROOT/.carry/bin:$PATH"
export LD_LIBRARY_PATH="$ROOT/.carry/lib/so${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ ! -f "$BUILD/build.ninja" ]; then
  meson setup "$BUILD" "$ROOT" -Dclang=disabled -Dtorch=enabled -Dtorch_cuda=true
fi
meson compile -C "$BUILD" -j "$(nproc)" "$@"
