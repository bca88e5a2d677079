#include "lowering_cache.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <thread>

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

// Disk entry: a 40-byte header, then the module.
constexpr uint32_t kMagic = 0x4d4c4d43;  // "CMLM"
constexpr uint32_t kFormat = 1;
struct Header {
  uint32_t magic, format;
  uint64_t keyLow, keyHigh;
  uint32_t wordCount;
  uint32_t opsLowered, opsInRegisters;
  uint32_t checksum;  // over the words, so a torn or edited file is never used
};
static_assert(sizeof(Header) == 40);  // no padding: the struct is the file format

uint32_t Checksum(std::span<const uint32_t> words) {
  const Hash128 h = Hasher().Add(words).Finish();
  return static_cast<uint32_t>(h.low ^ (h.high >> 32));
}

}  // namespace

std::filesystem::path CacheDirectory() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::filesystem::path(xdg) / "coopmat-maintenance1";
  if (const char* home = std::getenv("HOME"); home && *home)
    return std::filesystem::path(home) / ".cache" / "coopmat-maintenance1";
  return {};
}

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

LoweringCache::LoweringCache(std::filesystem::path directory, size_t memoryEntries)
    : directory_(std::move(directory)), capacity_(std::max<size_t>(memoryEntries, 1)) {}

std::shared_ptr<const CachedLowering> LoweringCache::Get(const Hash128& key, const std::function<CachedLowering()>& lower,
                                                         CacheSource& source) {
  std::promise<std::shared_ptr<const CachedLowering>> promise;
  std::optional<Future> pending;
  {
    std::lock_guard lock(mutex_);
    if (auto it = entries_.find(key); it != entries_.end()) {
      pending = it->second;
    } else {
      entries_.emplace(key, promise.get_future().share());
      order_.push_back(key);
      while (order_.size() > capacity_) {
        entries_.erase(order_.front());
        order_.pop_front();
      }
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
    throw;
  }
  promise.set_value(entry);
  return entry;
}

std::shared_ptr<const CachedLowering> LoweringCache::ReadDisk(const Hash128& key) const {
  if (directory_.empty()) return nullptr;
  std::ifstream file(directory_ / (key.Hex() + ".spv"), std::ios::binary);
  if (!file) return nullptr;
  Header header{};
  if (!file.read(reinterpret_cast<char*>(&header), sizeof(header))) return nullptr;
  if (header.magic != kMagic || header.format != kFormat || header.keyLow != key.low || header.keyHigh != key.high ||
      header.wordCount < 5 || header.wordCount > (64u << 20))
    return nullptr;
  auto entry = std::make_shared<CachedLowering>();
  entry->words.resize(header.wordCount);
  if (!file.read(reinterpret_cast<char*>(entry->words.data()), static_cast<std::streamsize>(header.wordCount * 4)))
    return nullptr;
  if (file.peek() != std::char_traits<char>::eof()) return nullptr;
  if (entry->words[0] != 0x07230203 || Checksum(entry->words) != header.checksum) return nullptr;
  entry->ok = true;
  entry->opsLowered = header.opsLowered;
  entry->opsInRegisters = header.opsInRegisters;
  return entry;
}

void LoweringCache::WriteDisk(const Hash128& key, const CachedLowering& entry) const {
  if (directory_.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(directory_, ec);
  // A name no other thread or process uses, renamed into place: readers see whole files only.
  static std::atomic<uint64_t> counter{0};
  const std::filesystem::path final = directory_ / (key.Hex() + ".spv");
  const std::filesystem::path temporary =
      directory_ / (key.Hex() + ".tmp." + std::to_string(getpid()) + "." +
                    std::to_string(std::hash<std::thread::id>()(std::this_thread::get_id())) + "." +
                    std::to_string(counter.fetch_add(1)));
  Header header{kMagic, kFormat, key.low, key.high, static_cast<uint32_t>(entry.words.size()),
                entry.opsLowered, entry.opsInRegisters, Checksum(entry.words)};
  {
    std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
    file.write(reinterpret_cast<const char*>(&header), sizeof(header));
    file.write(reinterpret_cast<const char*>(entry.words.data()), static_cast<std::streamsize>(entry.words.size() * 4));
    if (!file) {
      file.close();
      std::filesystem::remove(temporary, ec);
      return;
    }
  }
  std::filesystem::rename(temporary, final, ec);
  if (ec) std::filesystem::remove(temporary, ec);
}

}  // namespace coopmat::layer
