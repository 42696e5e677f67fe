# Sourced by the gpu suite's scripts: exits 77 (meson's skip) unless this
# machine has a GPU nvidia-smi can reach and kbcheck-worker was built with
# CUDA. Usage: source require_gpu.sh TORCH_CUDA(true|false)
if [ ! -e /dev/nvidiactl ] || ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "no GPU: skipped"; exit 77
fi
if [ "$1" != "true" ]; then
  echo "kbcheck-worker was built without -Dtorch_cuda=true: skipped"; exit 77
fi
