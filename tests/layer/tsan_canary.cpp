// A deliberate data race, for scripts/test's ThreadSanitizer stage: the stage requires
// ThreadSanitizer to report it (tests/layer/tsan_canary.sh), so a stage whose
// sanitizer is off, or whose options or suppressions silence every report, fails
// instead of passing the concurrency test unseen.
#include <atomic>
#include <cstdio>
#include <thread>

namespace {
// Written by two threads with nothing ordering the writes: the race. Through a volatile
// reference, so that each increment is an access of its own (a loop folded into one
// store left the threads' writes apart in time, and TSan missed one run in five).
int shared = 0;
std::atomic<int> started{0};

void Race() {
  started.fetch_add(1);
  while (started.load() < 2) continue;  // both threads write at once
  volatile int& value = shared;
  for (int i = 0; i < 100000; ++i) value = value + 1;
}
}  // namespace

int main() {
  std::thread other(Race);
  Race();
  other.join();
  std::printf("tsan canary: %d\n", shared);
  return 0;
}
