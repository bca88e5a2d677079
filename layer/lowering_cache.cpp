#include "lowering_cache.h"

#include "cache_files.h"


#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <set>

namespace coopmat::layer {
namespace {

// What other builds wrote is never read (their entries' build differs), but two builds
// may be used in turn (a distribution's package and a developer's, a host's and a
// runtime's sharing ~/.cache): each keeps its folder while it is in use (review
// 130c39d finding 7; before, every device creation removed the others' folders); a
// folder no device has opened for kUnusedCacheKept goes.
void RemoveUnusedBuilds(const platform::TrustedFolder& root) {
  const auto limit = std::chrono::system_clock::now() - kUnusedCacheKept;
  for (const platform::TrustedFolder::Entry& entry : root.List()) {
    if (entry.name == BuildId() || entry.modified >= limit) continue;
    if (entry.kind == platform::TrustedFolder::Entry::Kind::Folder) root.RemoveFolder(entry.name);
    else if (entry.kind == platform::TrustedFolder::Entry::Kind::File) root.Remove(entry.name);
  }
}

// Whether this process opens `directory` with this disk limit for the first time: the
// sweep of other builds and the full scan run then, not at every vkCreateDevice (and
// again when the limit changes, which may call for a trim).
bool FirstOpenInProcess(const std::filesystem::path& directory, uint64_t diskLimit) {
  static std::mutex mutex;
  static std::set<std::pair<std::string, uint64_t>> opened;
  std::lock_guard lock(mutex);
  return opened.insert({directory.string(), diskLimit}).second;
}

uint64_t Rotate(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

uint64_t Avalanche(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

// Disk entry: a 48-byte header, then the module.
constexpr uint32_t kMagic = 0x4d4c4d43;  // "CMLM"
constexpr uint32_t kFormat = 2;
struct Header {
  uint32_t magic, format;
  uint64_t keyLow, keyHigh;
  uint64_t build;  // the build identity's hash: an entry another build wrote is never used
  uint32_t wordCount;
  uint32_t opsLowered, opsInRegisters;
  uint32_t checksum;  // over the words, so a torn file is never used (not a MAC: the folder is the user's own)
};
static_assert(sizeof(Header) == 48);  // no padding: the struct is the file format

uint64_t BuildHash() { return Hasher().Add(std::string(BuildId())).Finish().low; }

uint32_t Checksum(std::span<const uint32_t> words) {
  const Hash128 h = Hasher().Add(words).Finish();
  return static_cast<uint32_t>(h.low ^ (h.high >> 32));
}

}  // namespace

std::string Hash128::Hex() const {
  char text[33];
  std::snprintf(text, sizeof(text), "%016llx%016llx", static_cast<unsigned long long>(high),
                static_cast<unsigned long long>(low));
  return text;
}

void Hasher::Mix(uint64_t word) {
  a_ = Rotate(a_ ^ Avalanche(word + count_), 27) * 0x87c37b91114253d5ull + b_;
  b_ = Rotate(b_ ^ Avalanche(word ^ 0x4cf5ad432745937full), 31) * 0x4cf5ad432745937full + a_;
  ++count_;
}

Hasher& Hasher::Add(std::span<const uint32_t> words) {
  Mix(words.size());
  size_t i = 0;
  for (; i + 1 < words.size(); i += 2) Mix(uint64_t{words[i]} | uint64_t{words[i + 1]} << 32);
  if (i < words.size()) Mix(words[i]);
  return *this;
}

Hasher& Hasher::Add(std::span<const uint8_t> bytes) {
  Mix(bytes.size());
  for (size_t i = 0; i < bytes.size(); i += 8) {
    uint64_t word = 0;
    std::memcpy(&word, bytes.data() + i, std::min<size_t>(8, bytes.size() - i));
    Mix(word);
  }
  return *this;
}

Hasher& Hasher::Add(uint64_t value) {
  Mix(value);
  return *this;
}

Hasher& Hasher::Add(const std::string& text) {
  return Add(std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

Hash128 Hasher::Finish() const { return {Avalanche(a_ ^ count_), Avalanche(b_ + a_)}; }

const char* ToString(CacheSource source) {
  switch (source) {
    case CacheSource::Lowered: return "lowered";
    case CacheSource::Memory: return "memory cache";
    case CacheSource::Disk: return "disk cache";
  }
  return "?";
}

size_t LoweringCache::MemoryCharge(const CachedLowering& entry) {
  // The fixed part stands for the map slot, the list node and the shared entry, so that
  // failures (no words) count too and the number of entries stays bounded.
  return 128 + entry.words.size() * sizeof(uint32_t) + entry.error.size();
}

LoweringCache::LoweringCache(const platform::TrustedFolder& root, CacheLimits limits,
                             std::function<void(const std::string&)> warn)
    : folder_(root.Sub(BuildId())), limits_(limits), warn_(std::move(warn)) {
  if (!folder_.valid()) {
    if (!folder_.why().empty())
      WarnOnce("shader cache: " + folder_.why() + "; pipeline-time lowerings are kept in memory only");
    return;
  }
  TouchCacheFile(folder_);  // this build is in use: other builds leave its folder alone
  if (!FirstOpenInProcess(folder_.path(), limits_.diskBytes)) {
    diskUsed_ = limits_.diskBytes / 4 * 3;  // at most what the last trim left; a write past the limit measures again
    return;
  }
  RemoveUnusedBuilds(root);
  RemoveStaleTemporaries(folder_);  // what writers that died mid-write left
  TrimDisk();  // also measures what is there
}

void LoweringCache::WarnOnce(const std::string& message) {
  if (warn_) std::call_once(warned_, [&] { warn_(message); });
}

std::shared_ptr<const CachedLowering> LoweringCache::Get(const Hash128& key, const std::function<CachedLowering()>& lower,
                                                         CacheSource& source, const DiskCheck& check, std::string* rejected) {
  std::promise<std::shared_ptr<const CachedLowering>> promise;
  std::optional<Future> pending;
  {
    std::lock_guard lock(mutex_);
    if (auto it = entries_.find(key); it != entries_.end()) {
      pending = it->second.future;
      TouchLocked(it->second);
    } else {
      InsertLocked(key, promise.get_future().share());
    }
  }
  if (pending) {  // another thread's lowering, finished or not: never wait holding the map
    source = CacheSource::Memory;
    return pending->get();
  }
  std::shared_ptr<const CachedLowering> entry;
  try {
    entry = ReadDisk(key);
    source = CacheSource::Disk;
    if (entry && check) {
      // A hit passes what fresh output passes (a scan, and spirv-val under validate).
      if (std::string why = check(entry->words); !why.empty()) {
        if (rejected) *rejected = why;
        folder_.Remove(EntryName(key));
        entry = nullptr;
      }
    }
    if (!entry) {
      source = CacheSource::Lowered;
      auto produced = std::make_shared<CachedLowering>(lower());
      if (produced->ok) WriteDisk(key, *produced);
      entry = std::move(produced);
    }
  } catch (...) {
    // Waiting threads must not hang: hand them the failure, and forget the key.
    promise.set_exception(std::current_exception());
    std::lock_guard lock(mutex_);
    ForgetLocked(key);
    throw;
  }
  promise.set_value(entry);
  std::lock_guard lock(mutex_);
  // An internal error may be transient (out of memory): the next request tries again.
  if (!entry->ok && entry->error.rfind("internal error", 0) == 0) ForgetLocked(key);
  else ChargeLocked(key, *entry);
  return entry;
}

void LoweringCache::InsertLocked(const Hash128& key, Future future) {
  Slot slot{std::move(future), order_.insert(order_.end(), key), 0};
  entries_.emplace(key, std::move(slot));
}

void LoweringCache::TouchLocked(Slot& slot) { order_.splice(order_.end(), order_, slot.position); }

void LoweringCache::ChargeLocked(const Hash128& key, const CachedLowering& entry) {
  const auto it = entries_.find(key);
  if (it == entries_.end() || it->second.bytes) return;
  it->second.bytes = MemoryCharge(entry);
  memoryUsed_ += it->second.bytes;
  // Oldest first; entries still being lowered are not charged yet and stay (threads
  // wait on them); the entry just charged stays even when it alone is over the limit.
  for (auto victim = order_.begin(); memoryUsed_ > limits_.memoryBytes && victim != order_.end();) {
    const auto slot = entries_.find(*victim);
    if (*victim == key || slot->second.bytes == 0) {
      ++victim;
      continue;
    }
    memoryUsed_ -= slot->second.bytes;
    victim = order_.erase(victim);
    entries_.erase(slot);
  }
}

void LoweringCache::ForgetLocked(const Hash128& key) {
  const auto it = entries_.find(key);
  if (it == entries_.end()) return;
  memoryUsed_ -= it->second.bytes;
  order_.erase(it->second.position);  // else a later insert of the key has two places in the order (review 2, finding 12)
  entries_.erase(it);
}

std::shared_ptr<const CachedLowering> LoweringCache::Peek(const Hash128& key, CacheSource& source, const DiskCheck& check) {
  {
    std::lock_guard lock(mutex_);
    if (auto it = entries_.find(key); it != entries_.end()) {
      // Another thread still lowering it is a compile this call may not wait for.
      if (it->second.future.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return nullptr;
      source = CacheSource::Memory;
      TouchLocked(it->second);
      try {
        return it->second.future.get();
      } catch (...) {
        return nullptr;
      }
    }
  }
  std::shared_ptr<const CachedLowering> entry = ReadDisk(key);
  if (!entry || (check && !check(entry->words).empty())) return nullptr;  // Get() says why, when it lowers
  source = CacheSource::Disk;
  std::promise<std::shared_ptr<const CachedLowering>> promise;
  promise.set_value(entry);
  std::lock_guard lock(mutex_);
  if (!entries_.count(key)) {
    InsertLocked(key, promise.get_future().share());
    ChargeLocked(key, *entry);
  }
  return entry;
}

std::shared_ptr<const CachedLowering> LoweringCache::ReadDisk(const Hash128& key) const {
  if (!folder_.valid()) return nullptr;
  const std::optional<std::string> bytes = ReadCacheFile(folder_, EntryName(key), sizeof(Header) + (64u << 22));
  if (!bytes || bytes->size() < sizeof(Header)) return nullptr;
  Header header{};
  std::memcpy(&header, bytes->data(), sizeof(header));
  if (header.magic != kMagic || header.format != kFormat || header.keyLow != key.low || header.keyHigh != key.high ||
      header.build != BuildHash() || header.wordCount < 5 || bytes->size() != sizeof(Header) + uint64_t{header.wordCount} * 4)
    return nullptr;
  auto entry = std::make_shared<CachedLowering>();
  entry->words.resize(header.wordCount);
  std::memcpy(entry->words.data(), bytes->data() + sizeof(Header), uint64_t{header.wordCount} * 4);
  if (entry->words[0] != 0x07230203 || Checksum(entry->words) != header.checksum) return nullptr;
  entry->ok = true;
  entry->opsLowered = header.opsLowered;
  entry->opsInRegisters = header.opsInRegisters;
  TouchCacheFile(folder_, EntryName(key));  // now the most recently used: the last the size limit removes
  return entry;
}

void LoweringCache::WriteDisk(const Hash128& key, const CachedLowering& entry) {
  if (!folder_.valid()) return;
  const Header header{kMagic, kFormat, key.low, key.high, BuildHash(), static_cast<uint32_t>(entry.words.size()),
                      entry.opsLowered, entry.opsInRegisters, Checksum(entry.words)};
  std::string bytes(sizeof(header) + entry.words.size() * 4, '\0');
  if (bytes.size() > limits_.diskBytes) return;  // it would evict everything, itself included
  std::memcpy(bytes.data(), &header, sizeof(header));
  std::memcpy(bytes.data() + sizeof(header), entry.words.data(), entry.words.size() * 4);
  if (!WriteCacheFileAtomically(folder_, EntryName(key), bytes)) {
    // Read-only or full: the app still works, lowering once per process.
    WarnOnce("shader cache: cannot write " + folder_.path().string() + " (" + std::strerror(errno) +
             "); pipeline-time lowerings are kept in memory only");
    return;
  }
  if (diskUsed_ += bytes.size(); diskUsed_ > limits_.diskBytes) TrimDisk();
}

void LoweringCache::TrimDisk() {
  // One trimmer at a time; a thread finding another one at work leaves it the job.
  std::unique_lock lock(trimMutex_, std::try_to_lock);
  if (!lock.owns_lock()) return;
  using Entry = platform::TrustedFolder::Entry;
  std::vector<Entry> files = folder_.List();
  std::erase_if(files, [](const Entry& file) {
    return file.kind != Entry::Kind::File || !file.name.ends_with(".spv");  // links are Kind::Other
  });
  uint64_t total = 0;
  for (const Entry& file : files) total += file.bytes;
  if (total > limits_.diskBytes) {
    // Down to three quarters, so that a full cache is not scanned again at every write.
    std::sort(files.begin(), files.end(), [](const Entry& a, const Entry& b) { return a.modified < b.modified; });
    // The newest stays where it fits the limit alone: it was just written or read. (A
    // limit lowered below an entry written before removes that one too.)
    for (const Entry& file : std::span(files).first(files.size() - 1)) {
      if (total <= limits_.diskBytes / 4 * 3) break;
      if (folder_.Remove(file.name)) total -= file.bytes;
    }
    if (total > limits_.diskBytes && folder_.Remove(files.back().name)) total -= files.back().bytes;
  }
  diskUsed_ = total;
}

}  // namespace coopmat::layer
