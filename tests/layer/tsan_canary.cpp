// A deliberate data race, for scripts/test's ThreadSanitizer stage: the stage requires
// ThreadSanitizer to report it (tests/layer/tsan_canary.sh), so a stage whose
// sanitizer is off, or whose options or suppressions silence every report, fails
// instead of passing the concurrency test unseen.
#include <cstdio>
#include <thread>

namespace {
int shared = 0;  // written by two threads with nothing ordering them: the race
}

int main() {
  std::thread other([] { for (int i = 0; i < 1000; ++i) ++shared; });
  for (int i = 0; i < 1000; ++i) ++shared;
  other.join();
  std::printf("tsan canary: %d\n", shared);
  return 0;
}
