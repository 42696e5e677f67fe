// kbcheck-worker: the process in which one candidate runs (harness/worker.h).
// Started by kbcheck verify; not meant to be run by hand.
#include "harness/worker.h"

int main(int argc, char** argv) { return kb::workerMain(argc, argv); }
