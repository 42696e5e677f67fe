// An attacker on a shared kbserve: its worker's directory lies in the
// server's state (STATE/scratch/kbcheck-worker-*), so the journal, which
// holds every client's files, is two levels up. If it can be opened, the
// answer is wrong on purpose: `ok` means the journal was unreadable.
#include <fcntl.h>
#include <unistd.h>

#include <kb/solution.h>

static bool peeked() {
  for (const char* p : {"../../journal.jsonl", "../journal.jsonl", "../../work", "../.."}) {
    int fd = ::open(p, O_RDONLY);
    if (fd >= 0) {
      ::close(fd);
      return true;
    }
  }
  return false;
}

KB_FORWARD(ctx) {
  kb::Tensor x = ctx.input(0);
  kb::Tensor w = ctx.param("linear.weight");
  kb::Tensor b = ctx.param("linear.bias");
  if (ctx.failed()) return;
  const int64_t m = x.size(0), k = x.size(1), n = w.size(0);
  kb::Tensor y = ctx.output(0, {m, n});
  if (ctx.failed()) return;
  const bool leak = peeked();
  const float* X = x.data_as<float>();
  const float* W = w.data_as<float>();
  const float* B = b.data_as<float>();
  float* Y = y.data_as<float>();
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float acc = B[j];
      for (int64_t p = 0; p < k; ++p) acc += X[i * k + p] * W[j * k + p];
      Y[i * n + j] = leak ? 1234.5f : (acc > 0.0f ? acc : 0.0f);
    }
}
