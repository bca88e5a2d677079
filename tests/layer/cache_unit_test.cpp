// The layer's caches as a trust boundary (issue 17, review 2 findings 1, 5, 6, 12, 13):
// the cache files module and LoweringCache compiled into the test, against a
// temporary folder: build identity, links and FIFOs, permissions, exclusive atomic
// writes, a relative XDG_CACHE_HOME, disk entries that must pass the check fresh
// output passes.
#include <catch2/catch_test_macros.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "cache_files.h"
#include "layer_test_util.h"
#include "lowering_cache.h"

using namespace coopmat::layer;
using layertest::ScopedEnv;
using layertest::TempPath;

namespace {

std::filesystem::path Fresh(const std::string& name) {
  const std::filesystem::path dir = TempPath(name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

mode_t Mode(const std::filesystem::path& path) {
  struct stat info{};
  REQUIRE(::lstat(path.c_str(), &info) == 0);
  return info.st_mode & 0777;
}

// A minimal module: the header only (what the cache stores is opaque to it).
std::vector<uint32_t> Module(uint32_t marker) { return {0x07230203, 0x00010600, 0, 100 + marker, 0}; }

CachedLowering Lowered(uint32_t marker) {
  CachedLowering entry;
  entry.ok = true;
  entry.words = Module(marker);
  entry.opsLowered = 1;
  return entry;
}

}  // namespace

TEST_CASE("cache files: regular files only, never a link or a FIFO, never blocking", "[layer][cache]") {
  const std::filesystem::path dir = Fresh("cache-files");
  REQUIRE(WriteCacheFileAtomically(dir / "entry", "payload"));
  CHECK(ReadCacheFile(dir / "entry", 100) == std::optional<std::string>("payload"));
  CHECK_FALSE(ReadCacheFile(dir / "entry", 3).has_value());  // larger than allowed
  CHECK_FALSE(ReadCacheFile(dir / "missing", 100).has_value());
  std::filesystem::create_symlink(dir / "entry", dir / "link");
  CHECK_FALSE(ReadCacheFile(dir / "link", 100).has_value());
  REQUIRE(::mkfifo((dir / "fifo").c_str(), 0600) == 0);
  const auto begin = std::chrono::steady_clock::now();
  CHECK_FALSE(ReadCacheFile(dir / "fifo", 100).has_value());  // before the fix: blocked forever
  CHECK(std::chrono::steady_clock::now() - begin < std::chrono::seconds(5));
  std::filesystem::create_directory(dir / "folder");
  CHECK_FALSE(ReadCacheFile(dir / "folder", 100).has_value());
  // A write over a planted link replaces the link, never writes through it.
  std::ofstream(dir / "target") << "untouched";
  std::filesystem::create_symlink(dir / "target", dir / "planted");
  REQUIRE(WriteCacheFileAtomically(dir / "planted", "new"));
  CHECK(ReadCacheFile(dir / "target", 100) == std::optional<std::string>("untouched"));
  CHECK(ReadCacheFile(dir / "planted", 100) == std::optional<std::string>("new"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("cache files: private folders and files, no temporary left, stale ones removed", "[layer][cache]") {
  const std::filesystem::path dir = Fresh("cache-private");
  const std::filesystem::path nested = dir / "a" / "b";
  REQUIRE(WriteCacheFileAtomically(nested / "entry", "x"));
  CHECK(Mode(dir / "a") == 0700);
  CHECK(Mode(nested) == 0700);
  CHECK(Mode(nested / "entry") == 0600);
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(nested)) files += e.is_regular_file();
  CHECK(files == 1);  // the temporary was renamed, not left
  // A writer that died an hour ago left a temporary; a fresh one belongs to a live writer.
  std::ofstream(nested / "entry.tmp.1.2.3") << "old";
  std::ofstream(nested / "entry.tmp.4.5.6") << "fresh";
  std::filesystem::last_write_time(nested / "entry.tmp.1.2.3",
                                   std::filesystem::file_time_type::clock::now() - std::chrono::hours(2));
  RemoveStaleTemporaries(nested);
  CHECK_FALSE(std::filesystem::exists(nested / "entry.tmp.1.2.3"));
  CHECK(std::filesystem::exists(nested / "entry.tmp.4.5.6"));
  // A folder that cannot be written: the write fails, nothing is left.
  std::filesystem::create_directory(dir / "ro");
  std::filesystem::permissions(dir / "ro", std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
  if (::geteuid() != 0) CHECK_FALSE(WriteCacheFileAtomically(dir / "ro" / "entry", "x"));  // root writes anyway
  std::filesystem::permissions(dir / "ro", std::filesystem::perms::owner_all);
  std::filesystem::remove_all(dir);
}

TEST_CASE("cache files: a relative XDG_CACHE_HOME is ignored", "[layer][cache]") {
  ScopedEnv home("HOME", "/nonexistent-home");
  {
    ScopedEnv xdg("XDG_CACHE_HOME", "relative/cache");
    CHECK(CacheDirectory() == std::filesystem::path("/nonexistent-home/.cache/coopmat-maintenance1"));
  }
  {
    ScopedEnv xdg("XDG_CACHE_HOME", "/abs/cache");
    CHECK(CacheDirectory() == std::filesystem::path("/abs/cache/coopmat-maintenance1"));
  }
  ScopedEnv relativeHome("HOME", "not/absolute");
  ScopedEnv xdg("XDG_CACHE_HOME", "");
  CHECK(CacheDirectory().empty());
}

TEST_CASE("lowering cache: entries of other builds are never used and are removed", "[layer][cache]") {
  const std::filesystem::path root = Fresh("cache-builds");
  REQUIRE(std::strlen(BuildId()) == 16);
  const Hash128 key = Hasher().Add(std::string("module")).Finish();
  int lowerings = 0;
  auto lower = [&] {
    ++lowerings;
    return Lowered(1);
  };
  CacheSource source;
  { LoweringCache(root).Get(key, lower, source); }
  CHECK(source == CacheSource::Lowered);
  const std::filesystem::path entry = root / BuildId() / (key.Hex() + ".spv");
  REQUIRE(std::filesystem::is_regular_file(entry));
  { LoweringCache(root).Get(key, lower, source); }
  CHECK(source == CacheSource::Disk);
  CHECK(lowerings == 1);

  // The same name written by another build (its header says so): not used, rewritten.
  {
    std::fstream file(entry, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(24);  // Header::build
    const uint64_t other = 0x0123456789abcdefull;
    file.write(reinterpret_cast<const char*>(&other), sizeof(other));
  }
  { LoweringCache(root).Get(key, lower, source); }
  CHECK(source == CacheSource::Lowered);
  CHECK(lowerings == 2);
  { LoweringCache(root).Get(key, lower, source); }
  CHECK(source == CacheSource::Disk);

  // An upgrade: the old build's folder is removed when the new build opens the cache.
  const std::filesystem::path old = root / "0000000000000000";
  std::filesystem::create_directories(old);
  std::ofstream(old / (key.Hex() + ".spv")) << "an older build's entry";
  { LoweringCache cache(root); }
  CHECK_FALSE(std::filesystem::exists(old));
  CHECK(std::filesystem::exists(entry));
  std::filesystem::remove_all(root);
}

TEST_CASE("lowering cache: a disk entry that fails the check is removed and lowered again", "[layer][cache]") {
  const std::filesystem::path root = Fresh("cache-check");
  const Hash128 key = Hasher().Add(std::string("checked")).Finish();
  int lowerings = 0;
  auto lower = [&] {
    ++lowerings;
    return Lowered(static_cast<uint32_t>(lowerings));
  };
  CacheSource source;
  { LoweringCache(root).Get(key, lower, source); }
  std::string rejected;
  auto refuse = [](std::span<const uint32_t>) { return std::string("it still uses the extension"); };
  auto accept = [](std::span<const uint32_t>) { return std::string(); };
  std::shared_ptr<const CachedLowering> got;
  { got = LoweringCache(root).Get(key, lower, source, refuse, &rejected); }
  CHECK(source == CacheSource::Lowered);
  CHECK(rejected == "it still uses the extension");
  CHECK(lowerings == 2);
  CHECK(got->words == Module(2));
  rejected.clear();
  { got = LoweringCache(root).Get(key, lower, source, accept, &rejected); }
  CHECK(source == CacheSource::Disk);  // the fresh lowering replaced the refused entry
  CHECK(rejected.empty());
  CHECK(got->words == Module(2));
  std::filesystem::remove_all(root);
}

TEST_CASE("lowering cache: a failed lowering leaves no duplicate in the eviction order", "[layer][cache]") {
  LoweringCache cache({}, 2);
  const Hash128 a = Hasher().Add(1).Finish(), b = Hasher().Add(2).Finish(), c = Hasher().Add(3).Finish();
  CacheSource source;
  CHECK_THROWS(cache.Get(a, []() -> CachedLowering { throw std::runtime_error("transient"); }, source));
  int lowerings = 0;
  auto lower = [&] {
    ++lowerings;
    return Lowered(0);
  };
  cache.Get(a, lower, source);
  cache.Get(b, lower, source);
  // Two entries fit: `a` is still there. With the failed attempt's stale `a` left in
  // the order, inserting `b` evicted the new `a` (lowered a second time here).
  cache.Get(a, lower, source);
  CHECK(source == CacheSource::Memory);
  CHECK(lowerings == 2);
  cache.Get(c, lower, source);  // now the oldest goes
  CHECK(lowerings == 3);
}
