#include "lowering_cache.h"

#include "cache_files.h"


#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

namespace coopmat::layer {
namespace {

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

LoweringCache::LoweringCache(const std::filesystem::path& root, size_t memoryEntries)
    : directory_(root.empty() ? root : root / BuildId()), capacity_(std::max<size_t>(memoryEntries, 1)) {
  if (root.empty()) return;
  // What older (or other) builds wrote is never used: remove it, and what writers
  // that died mid-write left here.
  std::error_code ec;
  for (std::filesystem::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code kind;
    if (it->path().filename() != BuildId() && !it->is_symlink(kind)) std::filesystem::remove_all(it->path(), kind);
  }
  RemoveStaleTemporaries(directory_);
}

std::shared_ptr<const CachedLowering> LoweringCache::Get(const Hash128& key, const std::function<CachedLowering()>& lower,
                                                         CacheSource& source, const DiskCheck& check, std::string* rejected) {
  std::promise<std::shared_ptr<const CachedLowering>> promise;
  std::optional<Future> pending;
  {
    std::lock_guard lock(mutex_);
    if (auto it = entries_.find(key); it != entries_.end()) {
      pending = it->second;
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
        std::error_code ec;
        std::filesystem::remove(EntryPath(key), ec);
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
    entries_.erase(key);
    order_.remove(key);  // else a later insert of the key has two places in the order (review 2, finding 12)
    throw;
  }
  promise.set_value(entry);
  return entry;
}

void LoweringCache::InsertLocked(const Hash128& key, Future future) {
  entries_.emplace(key, std::move(future));
  order_.push_back(key);
  while (order_.size() > capacity_) {
    entries_.erase(order_.front());
    order_.pop_front();
  }
}

std::shared_ptr<const CachedLowering> LoweringCache::Peek(const Hash128& key, CacheSource& source, const DiskCheck& check) {
  {
    std::lock_guard lock(mutex_);
    if (auto it = entries_.find(key); it != entries_.end()) {
      // Another thread still lowering it is a compile this call may not wait for.
      if (it->second.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return nullptr;
      source = CacheSource::Memory;
      try {
        return it->second.get();
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
  if (!entries_.count(key)) InsertLocked(key, promise.get_future().share());
  return entry;
}

std::shared_ptr<const CachedLowering> LoweringCache::ReadDisk(const Hash128& key) const {
  if (directory_.empty()) return nullptr;
  const std::optional<std::string> bytes = ReadCacheFile(EntryPath(key), sizeof(Header) + (64u << 22));
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
  return entry;
}

void LoweringCache::WriteDisk(const Hash128& key, const CachedLowering& entry) const {
  if (directory_.empty()) return;
  const Header header{kMagic, kFormat, key.low, key.high, BuildHash(), static_cast<uint32_t>(entry.words.size()),
                      entry.opsLowered, entry.opsInRegisters, Checksum(entry.words)};
  std::string bytes(sizeof(header) + entry.words.size() * 4, '\0');
  std::memcpy(bytes.data(), &header, sizeof(header));
  std::memcpy(bytes.data() + sizeof(header), entry.words.data(), entry.words.size() * 4);
  WriteCacheFileAtomically(EntryPath(key), bytes);
}

}  // namespace coopmat::layer
