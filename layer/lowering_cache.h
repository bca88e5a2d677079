// The pipeline-time lowering's cache: lowered SPIR-V by a 128-bit key of everything
// the result depends on (the original module, the stage's specialization, the
// subgroup sizes it may run with, the device's lowering options). In memory per
// device, and on disk so a restarted app does not lower again. A key is produced at
// most once: a thread that asks for a key another thread is lowering waits for it.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <future>
#include <list>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "platform.h"

namespace coopmat::layer {

struct Hash128 {
  uint64_t low = 0, high = 0;
  bool operator==(const Hash128&) const = default;
  std::string Hex() const;
};

// Deterministic across runs and hosts of the same endianness (it names disk files).
class Hasher {
 public:
  Hasher& Add(std::span<const uint32_t> words);
  Hasher& Add(std::span<const uint8_t> bytes);
  Hasher& Add(uint64_t value);
  Hasher& Add(const std::string& text);
  Hash128 Finish() const;

 private:
  void Mix(uint64_t word);
  uint64_t a_ = 0x9e3779b97f4a7c15ull, b_ = 0xc2b2ae3d27d4eb4full;
  uint64_t count_ = 0;
};

struct CachedLowering {
  bool ok = false;
  std::vector<uint32_t> words;  // the lowered module when ok
  std::string error;            // why it cannot be lowered, when !ok
  uint32_t opsLowered = 0, opsInRegisters = 0;
};

enum class CacheSource { Lowered, Memory, Disk };
const char* ToString(CacheSource source);

// How much the cache keeps. Both are least-recently-used caches: a hit makes an
// entry the newest (on disk, by its modification time, so other processes see it).
struct CacheLimits {
  size_t memoryBytes = size_t{64} << 20;  // per device: lowered modules and failures
  uint64_t diskBytes = uint64_t{1} << 30;  // the build's folder: Mesa's shader cache default
};

class LoweringCache {
 public:
  // root: the trusted folder entries are stored in (none: memory only), in a folder per
  // build identity (cache_files.h, BuildId), opened and checked here and then held;
  // other builds' folders are removed once unused. warn: told once, when the folder
  // cannot be trusted or opened, or the first time an entry cannot be written.
  explicit LoweringCache(const platform::TrustedFolder& root, CacheLimits limits = {},
                         std::function<void(const std::string&)> warn = nullptr);

  // What a disk entry must pass before it is used, as fresh output does: "" to accept,
  // else why not (the entry is then removed and the module lowered again).
  using DiskCheck = std::function<std::string(std::span<const uint32_t> words)>;

  // The entry for key, from memory, from disk or by calling lower() (once per key).
  // Failed lowerings are kept in memory only, and internal errors not at all (they
  // may be transient, e.g. out of memory). *rejected says why a disk entry was not
  // used, when one was found and refused.
  std::shared_ptr<const CachedLowering> Get(const Hash128& key, const std::function<CachedLowering()>& lower,
                                            CacheSource& source, const DiskCheck& check = nullptr,
                                            std::string* rejected = nullptr);

  // The entry for key if it is already known, in memory (finished) or on disk (and
  // passing `check`), without lowering or waiting: for pipelines created with
  // VK_PIPELINE_CREATE_FAIL_ON_PIPELINE_COMPILE_REQUIRED_BIT. Null on a miss.
  std::shared_ptr<const CachedLowering> Peek(const Hash128& key, CacheSource& source, const DiskCheck& check = nullptr);

  const std::filesystem::path& directory() const { return folder_.path(); }
  // The disk file of key's entry (whether or not it exists), for messages.
  std::filesystem::path EntryPath(const Hash128& key) const { return folder_.path() / EntryName(key); }

  // What an entry counts against CacheLimits::memoryBytes.
  static size_t MemoryCharge(const CachedLowering& entry);

 private:
  struct HashOf {
    size_t operator()(const Hash128& h) const { return static_cast<size_t>(h.low ^ (h.high * 31)); }
  };
  using Future = std::shared_future<std::shared_ptr<const CachedLowering>>;
  struct Slot {
    Future future;
    std::list<Hash128>::iterator position;  // in order_
    size_t bytes = 0;                       // charged once finished; 0 while lowering
  };

  // mutex_ held for the *Locked ones.
  void InsertLocked(const Hash128& key, Future future);
  void TouchLocked(Slot& slot);
  // Charges a finished entry and evicts the least recently used finished ones beyond the limit.
  void ChargeLocked(const Hash128& key, const CachedLowering& entry);
  void ForgetLocked(const Hash128& key);

  static std::string EntryName(const Hash128& key) { return key.Hex() + ".spv"; }
  std::shared_ptr<const CachedLowering> ReadDisk(const Hash128& key) const;
  void WriteDisk(const Hash128& key, const CachedLowering& entry);
  // Removes the least recently used disk entries until the folder is well under its limit.
  void TrimDisk();

  void WarnOnce(const std::string& message);

  platform::TrustedFolder folder_;  // this build's, held open: entries are read and written through it
  CacheLimits limits_;
  std::function<void(const std::string&)> warn_;
  std::once_flag warned_;
  std::mutex mutex_;
  std::unordered_map<Hash128, Slot, HashOf> entries_;
  std::list<Hash128> order_;  // least recently used first
  size_t memoryUsed_ = 0;
  std::atomic<uint64_t> diskUsed_{0};  // an estimate between scans (other processes write too)
  std::mutex trimMutex_;
};

}  // namespace coopmat::layer
