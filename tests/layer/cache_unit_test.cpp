// The layer's caches as a trust boundary (issue 17, review 2 findings 1, 5, 6, 12, 13):
// the cache files module and LoweringCache compiled into the test, against a
// temporary folder: build identity, links and FIFOs, permissions, exclusive atomic
// writes, a relative XDG_CACHE_HOME, disk entries that must pass the check fresh
// output passes.
#include <catch2/catch_test_macros.hpp>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cache_files.h"
#include "layer_test_util.h"
#include "lowering_cache.h"

using namespace coopmat::layer;
using layertest::ScopedEnv;
using layertest::TempPath;
using coopmat::platform::TrustedFolder;

namespace {

TrustedFolder Opened(const std::filesystem::path& folder) { return TrustedFolder::Open(folder); }

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
  {
    const TrustedFolder folder = Opened(dir);
    REQUIRE(folder.valid());
    REQUIRE(WriteCacheFileAtomically(folder, "entry", "payload"));
    CHECK(ReadCacheFile(folder, "entry", 100) == std::optional<std::string>("payload"));
    CHECK_FALSE(ReadCacheFile(folder, "entry", 3).has_value());  // larger than allowed
    CHECK_FALSE(ReadCacheFile(folder, "missing", 100).has_value());
    std::filesystem::create_symlink(dir / "entry", dir / "link");
    CHECK_FALSE(ReadCacheFile(folder, "link", 100).has_value());
    REQUIRE(::mkfifo((dir / "fifo").c_str(), 0600) == 0);
    const auto begin = std::chrono::steady_clock::now();
    CHECK_FALSE(ReadCacheFile(folder, "fifo", 100).has_value());  // before the fix: blocked forever
    CHECK(std::chrono::steady_clock::now() - begin < std::chrono::seconds(5));
    std::filesystem::create_directory(dir / "folder");
    CHECK_FALSE(ReadCacheFile(folder, "folder", 100).has_value());
    // A write over a planted link replaces the link, never writes through it.
    std::ofstream(dir / "target") << "untouched";
    std::filesystem::create_symlink(dir / "target", dir / "planted");
    REQUIRE(WriteCacheFileAtomically(folder, "planted", "new"));
    CHECK(ReadCacheFile(folder, "target", 100) == std::optional<std::string>("untouched"));
    CHECK(ReadCacheFile(folder, "planted", 100) == std::optional<std::string>("new"));
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("cache files: private folders and files, no temporary left, stale ones removed", "[layer][cache]") {
  const std::filesystem::path dir = Fresh("cache-private");
  const std::filesystem::path nested = dir / "a" / "b";
  const TrustedFolder folder = Opened(nested);  // its missing parents made too
  REQUIRE(WriteCacheFileAtomically(folder, "entry", "x"));
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
  RemoveStaleTemporaries(folder);
  CHECK_FALSE(std::filesystem::exists(nested / "entry.tmp.1.2.3"));
  CHECK(std::filesystem::exists(nested / "entry.tmp.4.5.6"));
  // A folder that cannot be written: the write fails, nothing is left.
  std::filesystem::create_directory(dir / "ro");
  std::filesystem::permissions(dir / "ro", std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
  if (::geteuid() != 0) CHECK_FALSE(WriteCacheFileAtomically(Opened(dir / "ro"), "entry", "x"));  // root writes anyway
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
  { LoweringCache(Opened(root)).Get(key, lower, source); }
  CHECK(source == CacheSource::Lowered);
  const std::filesystem::path entry = root / BuildId() / (key.Hex() + ".spv");
  REQUIRE(std::filesystem::is_regular_file(entry));
  { LoweringCache(Opened(root)).Get(key, lower, source); }
  CHECK(source == CacheSource::Disk);
  CHECK(lowerings == 1);

  // The same name written by another build (its header says so): not used, rewritten.
  {
    std::fstream file(entry, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(24);  // Header::build
    const uint64_t other = 0x0123456789abcdefull;
    file.write(reinterpret_cast<const char*>(&other), sizeof(other));
  }
  { LoweringCache(Opened(root)).Get(key, lower, source); }
  CHECK(source == CacheSource::Lowered);
  CHECK(lowerings == 2);
  { LoweringCache(Opened(root)).Get(key, lower, source); }
  CHECK(source == CacheSource::Disk);

  // Another build's folder goes once unused for a month; one in use stays (two builds
  // used in turn keep their caches: review 130c39d finding 7). The sweep runs once per
  // process and disk limit, hence a limit this process has not opened the folder with.
  const std::filesystem::path old = root / "0000000000000000", inUse = root / "1111111111111111";
  for (const auto& other : {old, inUse}) {
    std::filesystem::create_directories(other);
    std::ofstream(other / (key.Hex() + ".spv")) << "another build's entry";
  }
  std::filesystem::last_write_time(old, std::filesystem::file_time_type::clock::now() - std::chrono::hours(24 * 31));
  std::filesystem::last_write_time(inUse, std::filesystem::file_time_type::clock::now() - std::chrono::hours(24 * 29));
  { LoweringCache cache(Opened(root), CacheLimits{.diskBytes = uint64_t{1} << 29}); }
  CHECK_FALSE(std::filesystem::exists(old));
  CHECK(std::filesystem::exists(inUse / (key.Hex() + ".spv")));
  CHECK(std::filesystem::exists(entry));
  // Opening the cache marks this build's folder as in use.
  std::filesystem::last_write_time(root / BuildId(), std::filesystem::file_time_type::clock::now() - std::chrono::hours(24 * 40));
  { LoweringCache cache(Opened(root)); }
  CHECK(std::filesystem::last_write_time(root / BuildId()) > std::filesystem::file_time_type::clock::now() - std::chrono::hours(1));
  std::filesystem::remove_all(root);
}

// Review 130c39d finding 6: a cache folder that existed before the layer is trusted
// only when it is this user's and no one else may write it; otherwise the lowerings
// stay in memory (one warning) and nothing there is read or written.
TEST_CASE("lowering cache: a folder others may write is neither read nor written", "[layer][cache]") {
  const std::filesystem::path root = Fresh("cache-loose") / "lowered";
  const Hash128 key = Hasher().Add(std::string("module")).Finish();
  CacheSource source;
  { LoweringCache(Opened(root)).Get(key, [] { return Lowered(1); }, source); }  // a good entry, in a private folder
  REQUIRE(std::filesystem::exists(root / BuildId() / (key.Hex() + ".spv")));
  for (const std::filesystem::path& loosened : {root / BuildId(), root}) {
    INFO(loosened);
    REQUIRE(::chmod(loosened.c_str(), 0777) == 0);
    std::vector<std::string> warnings;
    int lowerings = 0;
    LoweringCache cache(Opened(root), {}, [&](const std::string& message) { warnings.push_back(message); });
    cache.Get(key, [&] { ++lowerings; return Lowered(1); }, source);
    CHECK(source == CacheSource::Lowered);  // the entry there is not read
    CHECK(lowerings == 1);
    cache.Get(Hasher().Add(7).Finish(), [] { return Lowered(2); }, source);
    REQUIRE(warnings.size() == 1);
    CHECK(warnings[0].find("writable by others") != std::string::npos);
    REQUIRE(::chmod(loosened.c_str(), 0700) == 0);
  }
  size_t entries = 0;
  for (const auto& entry : std::filesystem::directory_iterator(root / BuildId())) entries += entry.is_regular_file();
  CHECK(entries == 1);  // nothing was written while loosened
  std::filesystem::remove_all(root.parent_path());
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
  { LoweringCache(Opened(root)).Get(key, lower, source); }
  std::string rejected;
  auto refuse = [](std::span<const uint32_t>) { return std::string("it still uses the extension"); };
  auto accept = [](std::span<const uint32_t>) { return std::string(); };
  std::shared_ptr<const CachedLowering> got;
  { got = LoweringCache(Opened(root)).Get(key, lower, source, refuse, &rejected); }
  CHECK(source == CacheSource::Lowered);
  CHECK(rejected == "it still uses the extension");
  CHECK(lowerings == 2);
  CHECK(got->words == Module(2));
  rejected.clear();
  { got = LoweringCache(Opened(root)).Get(key, lower, source, accept, &rejected); }
  CHECK(source == CacheSource::Disk);  // the fresh lowering replaced the refused entry
  CHECK(rejected.empty());
  CHECK(got->words == Module(2));
  std::filesystem::remove_all(root);
}

TEST_CASE("lowering cache: a failed lowering leaves no duplicate in the eviction order", "[layer][cache]") {
  LoweringCache cache({}, CacheLimits{.memoryBytes = 2 * LoweringCache::MemoryCharge(Lowered(0))});
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

// Review 2 findings 6 and 12: the memory cache was bounded by a count (256 modules of
// any size) and evicted the oldest insert, however hot.
TEST_CASE("lowering cache: memory is bounded in bytes, least recently used out first", "[layer][cache]") {
  const size_t entry = LoweringCache::MemoryCharge(Lowered(0));
  LoweringCache cache({}, CacheLimits{.memoryBytes = 2 * entry});
  const Hash128 a = Hasher().Add(1).Finish(), b = Hasher().Add(2).Finish(), c = Hasher().Add(3).Finish();
  int lowerings = 0;
  auto lower = [&] {
    ++lowerings;
    return Lowered(0);
  };
  CacheSource source;
  cache.Get(a, lower, source);
  cache.Get(b, lower, source);
  cache.Get(a, lower, source);  // a is now the most recently used
  CHECK(source == CacheSource::Memory);
  cache.Get(c, lower, source);  // evicts b, not a
  CHECK(lowerings == 3);
  cache.Get(a, lower, source);
  CHECK(source == CacheSource::Memory);
  cache.Get(b, lower, source);
  CHECK(source == CacheSource::Lowered);
  CHECK(lowerings == 4);

  // A module as big as three small ones takes their room: bytes count, not entries.
  LoweringCache small({}, CacheLimits{.memoryBytes = 4 * entry});
  auto big = [entry] {
    CachedLowering out = Lowered(0);
    out.words.resize(out.words.size() + 2 * entry / 4);
    return out;
  };
  REQUIRE(LoweringCache::MemoryCharge(big()) == 3 * entry);
  small.Get(a, lower, source);
  small.Get(b, lower, source);
  small.Get(c, big, source);  // five entries' worth: the oldest, a, goes
  small.Get(b, lower, source);
  CHECK(source == CacheSource::Memory);
  small.Get(a, lower, source);
  CHECK(source == CacheSource::Lowered);
}

TEST_CASE("lowering cache: refusals are kept, internal errors are not", "[layer][cache]") {
  LoweringCache cache({});
  const Hash128 refused = Hasher().Add(1).Finish(), broken = Hasher().Add(2).Finish();
  int lowerings = 0;
  auto fail = [&](const char* why) {
    return [&lowerings, why] {
      ++lowerings;
      CachedLowering out;
      out.error = why;
      return out;
    };
  };
  CacheSource source;
  cache.Get(refused, fail("the matrix has no constant Use"), source);
  CHECK(cache.Get(refused, fail("the matrix has no constant Use"), source)->error == "the matrix has no constant Use");
  CHECK(source == CacheSource::Memory);
  CHECK(lowerings == 1);
  // std::bad_alloc, say: the next pipeline tries again.
  cache.Get(broken, fail("internal error: std::bad_alloc"), source);
  cache.Get(broken, fail("internal error: std::bad_alloc"), source);
  CHECK(source == CacheSource::Lowered);
  CHECK(lowerings == 3);
}

TEST_CASE("lowering cache: the disk folder stays within its limit, least recently used out first", "[layer][cache]") {
  const std::filesystem::path root = Fresh("cache-disk-limit");
  const Hash128 keys[] = {Hasher().Add(1).Finish(), Hasher().Add(2).Finish(), Hasher().Add(3).Finish(),
                          Hasher().Add(4).Finish()};
  int lowerings = 0;
  auto lower = [&] {
    ++lowerings;
    return Lowered(0);
  };
  CacheSource source;
  for (int i = 0; i < 3; ++i) LoweringCache(Opened(root)).Get(keys[i], lower, source);
  auto path = [&](int i) { return root / BuildId() / (keys[i].Hex() + ".spv"); };
  const uint64_t one = std::filesystem::file_size(path(0));
  // Written in order a, b, c, an hour apart; then a is read: now the most recent.
  const auto now = std::filesystem::file_time_type::clock::now();
  for (int i = 0; i < 3; ++i) std::filesystem::last_write_time(path(i), now - std::chrono::hours(3 - i));
  const CacheLimits room{.diskBytes = 3 * one + one / 2};
  LoweringCache(Opened(root), room).Get(keys[0], lower, source);
  CHECK(source == CacheSource::Disk);
  // A fourth entry goes over the limit: the oldest go until three quarters are left.
  LoweringCache(Opened(root), room).Get(keys[3], lower, source);
  CHECK(std::filesystem::exists(path(0)));
  CHECK_FALSE(std::filesystem::exists(path(1)));
  CHECK_FALSE(std::filesystem::exists(path(2)));
  CHECK(std::filesystem::exists(path(3)));
  // Opening the cache with a smaller limit trims it at once.
  { LoweringCache cache(Opened(root), CacheLimits{.diskBytes = one + one / 2}); }
  size_t left = 0;
  for (const auto& entry : std::filesystem::directory_iterator(root / BuildId())) left += entry.is_regular_file();
  CHECK(left == 1);  // the most recently used alone
  // A limit below that one entry leaves nothing (it kept the entry, over the limit).
  { LoweringCache cache(Opened(root), CacheLimits{.diskBytes = one / 2}); }
  left = 0;
  for (const auto& entry : std::filesystem::directory_iterator(root / BuildId())) left += entry.is_regular_file();
  CHECK(left == 0);
  std::filesystem::remove_all(root);
}

TEST_CASE("lowering cache: a folder that cannot be written is said once, and lowering goes on", "[layer][cache]") {
  const std::filesystem::path root = Fresh("cache-unwritable") / "lowered";
  std::ofstream(root) << "a file where the folder should be";
  std::vector<std::string> warnings;
  LoweringCache cache(Opened(root), {}, [&](const std::string& message) { warnings.push_back(message); });
  CacheSource source;
  for (uint64_t i = 0; i < 3; ++i) CHECK(cache.Get(Hasher().Add(i).Finish(), [] { return Lowered(0); }, source)->ok);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find(root.string() + " is not a folder") != std::string::npos);
  std::filesystem::remove_all(root.parent_path());
}

namespace {

// An entry as the layer writes it, for `key` with the module Module(marker): what another
// user's cache holds under the same name and build (review dbb465e finding 5).
std::string EntryBytes(const Hash128& key, uint32_t marker) {
  const std::filesystem::path scratch = Fresh("cache-scratch");
  CacheSource source;
  LoweringCache(Opened(scratch)).Get(key, [&] { return Lowered(marker); }, source);
  std::string bytes = layertest::ReadText(scratch / BuildId() / (key.Hex() + ".spv"));
  std::filesystem::remove_all(scratch);
  return bytes;
}

constexpr uid_t kOtherUser = 65534;  // nobody

// Another process (as another user when asked and the test runs as root) moves the victim's
// coopmat-maintenance1 aside and puts a folder of its own in its place, holding
// `planted` under the name of the victim's entry: the review's reproduction.
void SwapCacheFolder(const std::filesystem::path& base, const std::string& entryName, const std::string& planted,
                     bool asOtherUser) {
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    if (asOtherUser && ::geteuid() == 0 && (::setgid(kOtherUser) != 0 || ::setuid(kOtherUser) != 0)) ::_exit(2);
    const std::filesystem::path folder = base / "coopmat-maintenance1";
    std::error_code ec;
    std::filesystem::rename(folder, base / "moved-aside", ec);
    if (ec && ec != std::errc::no_such_file_or_directory) ::_exit(3);  // none yet: it plants one all the same
    std::filesystem::create_directories(folder / "lowered" / BuildId(), ec);
    std::ofstream(folder / "lowered" / BuildId() / entryName, std::ios::binary) << planted;
    ::_exit(ec ? 4 : 0);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
}

}  // namespace

namespace {

// The lowering cache as the layer opens it (device.cpp): under CacheDirectory().
std::unique_ptr<LoweringCache> LayerLoweringCache(std::vector<std::string>& warnings) {
  return std::make_unique<LoweringCache>(OpenCacheDirectory().Sub("lowered"), CacheLimits{},
                                         [&](const std::string& message) { warnings.push_back(message); });
}

}  // namespace

// Review dbb465e finding 5, as the review reproduces it: a cache base others may write
// (no sticky bit), the victim's cache opened, then another user swaps the folder. Before
// the fix the victim's next read took the planted entry (Disk, words of marker 666).
TEST_CASE("lowering cache: a base others may write is refused, a swapped folder never read", "[layer][cache]") {
  const std::filesystem::path base = Fresh("cache-shared-base");
  REQUIRE(::chmod(base.c_str(), 0777) == 0);
  ScopedEnv xdg("XDG_CACHE_HOME", base.string());
  const Hash128 key = Hasher().Add(std::string("not lowered yet")).Finish();
  const std::string planted = EntryBytes(key, 666);
  std::vector<std::string> earlier, warnings;
  CacheSource source;
  LayerLoweringCache(earlier)->Get(Hasher().Add(std::string("lowered earlier")).Finish(), [] { return Lowered(2); }, source);
  auto cache = LayerLoweringCache(warnings);
  SwapCacheFolder(base, key.Hex() + ".spv", planted, /*asOtherUser=*/true);
  const auto entry = cache->Get(key, [] { return Lowered(1); }, source);
  CHECK(source == CacheSource::Lowered);
  CHECK(entry->words == Module(1));
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find(base.string() + " is writable by others") != std::string::npos);
  std::filesystem::remove_all(base);
}

// The race itself on a base only the user may write: the folder's path is swapped after
// the cache was opened (another process of the user's, or one that could write the base
// a moment earlier). The cache keeps using the folder it opened, through its handle:
// what was there is still read, nothing planted at the path is.
TEST_CASE("lowering cache: a folder swapped after it was opened is not followed", "[layer][cache]") {
  const std::filesystem::path base = Fresh("cache-swapped");
  ScopedEnv xdg("XDG_CACHE_HOME", base.string());
  const Hash128 earlier = Hasher().Add(std::string("lowered earlier")).Finish();
  const Hash128 key = Hasher().Add(std::string("not lowered yet")).Finish();
  const std::string planted = EntryBytes(key, 666);
  std::vector<std::string> warnings;
  CacheSource source;
  LayerLoweringCache(warnings)->Get(earlier, [] { return Lowered(2); }, source);
  auto cache = LayerLoweringCache(warnings);
  SwapCacheFolder(base, key.Hex() + ".spv", planted, /*asOtherUser=*/false);
  const auto entry = cache->Get(key, [] { return Lowered(1); }, source);
  CHECK(source == CacheSource::Lowered);
  CHECK(entry->words == Module(1));
  CHECK(cache->Get(earlier, [] { return Lowered(3); }, source)->words == Module(2));
  CHECK(source == CacheSource::Disk);  // from the folder it opened, now moved aside
  CHECK(std::filesystem::exists(base / "moved-aside" / "lowered" / BuildId() / (key.Hex() + ".spv")));
  CHECK(warnings.empty());
  std::filesystem::remove_all(base);
}

// The rules for a cache base others may write (review dbb465e finding 5): trusted only
// when sticky (like /tmp: no one may rename or remove what is not theirs), and then only
// a coopmat-maintenance1 of the user's own that no one else may write. A folder that is a
// link is refused; a base that is a link is judged by the folder it names.
TEST_CASE("cache folder: a shared base, sticky or not, links and other users' folders", "[layer][cache]") {
  const std::filesystem::path base = Fresh("cache-base-rules");
  REQUIRE(::chmod(base.c_str(), 01777) == 0);
  const std::filesystem::path folder = base / "coopmat-maintenance1";
  const bool root = ::geteuid() == 0;  // chown to another user needs root
  SECTION("sticky: the user's own folder, made 0700 when missing, is trusted") {
    const TrustedFolder opened = Opened(folder);
    REQUIRE(opened.valid());
    CHECK(Mode(folder) == 0700);
    REQUIRE(WriteCacheFileAtomically(opened, "entry", "x"));
    CHECK(ReadCacheFile(opened, "entry", 10) == std::optional<std::string>("x"));
  }
  SECTION("sticky, but the folder is writable by others") {
    std::filesystem::create_directory(folder);
    REQUIRE(::chmod(folder.c_str(), 0777) == 0);
    CHECK_FALSE(Opened(folder).valid());
    CHECK(Opened(folder).why() == folder.string() + " is writable by others");
  }
  SECTION("sticky, but the folder is another user's") {
    if (!root) SKIP("chown needs root");
    std::filesystem::create_directory(folder);
    REQUIRE(::chown(folder.c_str(), kOtherUser, kOtherUser) == 0);
    CHECK(Opened(folder).why() == folder.string() + " is another user's");
  }
  SECTION("not sticky") {
    REQUIRE(::chmod(base.c_str(), 0777) == 0);
    std::filesystem::create_directory(folder);  // the user's own, 0700: still refused
    REQUIRE(::chmod(folder.c_str(), 0700) == 0);
    CHECK(Opened(folder).why() == base.string() + " is writable by others and not sticky");
  }
  SECTION("a base of another user") {
    if (!root) SKIP("chown needs root");
    REQUIRE(::chmod(base.c_str(), 0755) == 0);
    REQUIRE(::chown(base.c_str(), kOtherUser, kOtherUser) == 0);
    CHECK(Opened(folder).why() == base.string() + " is another user's");
  }
  SECTION("the folder is a link, even to a folder of the user's") {
    std::filesystem::create_directory(base / "elsewhere");
    REQUIRE(::chmod((base / "elsewhere").c_str(), 0700) == 0);
    std::filesystem::create_directory_symlink(base / "elsewhere", folder);
    CHECK(Opened(folder).why() == folder.string() + " is a link");
    REQUIRE(::chmod(base.c_str(), 0700) == 0);
    std::filesystem::create_directory_symlink(base / "elsewhere", base / "lowered");
    CHECK(Opened(base).Sub("lowered").why() == (base / "lowered").string() + " is a link");
  }
  SECTION("a base that is a link: judged by the folder it names") {
    const std::filesystem::path target = Fresh("cache-base-target");
    std::filesystem::create_directory_symlink(target, base / "link");
    CHECK(Opened(base / "link" / "coopmat-maintenance1").valid());  // the user's own, 0755
    REQUIRE(::chmod(target.c_str(), 0777) == 0);
    CHECK(Opened(base / "link" / "coopmat-maintenance1").why() ==
          (base / "link").string() + " is writable by others and not sticky");
    std::filesystem::remove_all(target);
  }
  std::filesystem::remove_all(base);
}
