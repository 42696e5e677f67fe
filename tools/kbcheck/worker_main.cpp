// kbcheck-worker: the processes verification runs in, started by kbcheck
// verify, not by hand.
//   kbcheck-worker candidate REQUEST.json   one candidate, confined (verify/worker.h)
//   kbcheck-worker reference --task DIR --device DEV [--seeds S,...] < REQUEST.json
//                                          the reference and the comparison (verify/compare.h)
#include <cstdio>
#include <cstring>

#include "profile/timing.h"
#include "verify/worker.h"
#include "verify/compare.h"

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "candidate") == 0) return kb::verify::workerMain(argc - 1, argv + 1, &kb::profile::prepareTiming);
  if (argc >= 2 && std::strcmp(argv[1], "reference") == 0) return kb::verify::referenceMain(argc - 1, argv + 1);
  std::fprintf(stderr, "usage: kbcheck-worker candidate REQUEST.json | reference --task DIR --device DEV (started by kbcheck verify and kbprof)\n");
  return 2;
}
