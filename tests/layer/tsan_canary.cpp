// A deliberate data race, for scripts/test's ThreadSanitizer stage: the stage requires
// ThreadSanitizer to report it (tests/layer/tsan_canary.sh), so a stage whose
// sanitizer is off, or whose options or suppressions silence every report, fails
// instead of passing the concurrency test unseen.
#include <atomic>
#include <cstdio>
#include <functional>
#include <thread>

namespace {
// Written by two threads with nothing ordering the writes: the race. Through a volatile
// reference, so that each increment is an access of its own. TSan's shadow keeps a few
// recent accesses per word and can miss a given race (one run in ten here), so the race
// is run in rounds: with halt_on_error the first report ends the program.
int shared = 0;

void Race(std::atomic<int>& started) {
  started.fetch_add(1);
  while (started.load() < 2) continue;  // both threads write at once
  volatile int& value = shared;
  for (int i = 0; i < 20000; ++i) value = value + 1;
}
}  // namespace

int main() {
  for (int round = 0; round < 40; ++round) {
    std::atomic<int> started{0};
    std::thread other(Race, std::ref(started));
    Race(started);
    other.join();
  }
  std::printf("tsan canary: %d\n", shared);
  return 0;
}
