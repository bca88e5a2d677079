// The cache files (layer/cache_files.cpp) over platform_windows.cpp, under Wine: the
// same promises tests/layer/cache_unit_test.cpp checks on Linux. A plain program:
// Debian has no Windows build of Catch2.
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "cache_files.h"
#include "platform.h"

using namespace coopmat::layer;
namespace platform = coopmat::platform;

namespace {

int failures = 0;

void Check(bool ok, const char* what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAIL", what);
  failures += !ok;
}

size_t Temporaries(const std::filesystem::path& dir) {
  size_t count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    count += entry.path().filename().string().find(".tmp.") != std::string::npos;
  return count;
}

}  // namespace

int main() {
  platform::SetEnvironment("LOCALAPPDATA", "C:\\users\\someone\\AppData\\Local");
  Check(CacheDirectory() == std::filesystem::path("C:\\users\\someone\\AppData\\Local\\coopmat-maintenance1"),
        "the cache is %LOCALAPPDATA%\\coopmat-maintenance1");
  platform::SetEnvironment("LOCALAPPDATA", "relative\\folder");
  Check(CacheDirectory().empty(), "a relative %LOCALAPPDATA% is ignored");
  platform::SetEnvironment("LOCALAPPDATA", nullptr);
  Check(CacheDirectory().empty(), "no %LOCALAPPDATA%, no cache");

  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "coopmat-cache-files-test";
  std::filesystem::remove_all(dir);
  const std::filesystem::path nested = dir / "a" / "b";
  {
    const platform::TrustedFolder folder = platform::TrustedFolder::Open(nested);
    Check(folder.valid(), "a cache folder is made with its parents, and trusted: the user owns it (owner SID)");
    Check(WriteCacheFileAtomically(folder, "entry", "payload"), "a write in it creates the file");
    Check(ReadCacheFile(folder, "entry", 100) == std::optional<std::string>("payload"), "what was written is read back");
    Check(!ReadCacheFile(folder, "entry", 3), "a file larger than allowed is not read");
    Check(!ReadCacheFile(folder, "missing", 100), "a missing file is not read");
    Check(!ReadCacheFile(platform::TrustedFolder::Open(dir), "a", 100), "a folder is not read");
    Check(WriteCacheFileAtomically(folder, "entry", "replaced"), "a second write replaces the file");
    Check(ReadCacheFile(folder, "entry", 100) == std::optional<std::string>("replaced"), "readers see the new file whole");
    Check(Temporaries(nested) == 0, "no temporary is left");

    errno = 0;
    Check(!platform::WriteNewFile(nested / "entry", "x") && errno == EEXIST,
          "an exclusive create fails on an existing name (EEXIST)");
    Check(ReadCacheFile(folder, "entry", 100) == std::optional<std::string>("replaced"), "and leaves that file alone");

    // Not checked: that the held folder cannot be renamed (review dbb465e finding 5). Wine
    // does not apply sharing modes to folders (the rename succeeds), so that part waits
    // for a Windows machine, as links do (docs/windows.md).
    Check(folder.Sub("c").valid() && std::filesystem::is_directory(nested / "c"), "a folder below it is made and trusted");
    std::ofstream(nested / "file") << "x";
    Check(!folder.Sub("file").valid() && folder.Sub("file").why() == (nested / "file").string() + " is not a folder",
          "a file where a folder should be is refused");

    // Links planted at the name are not checked here: Wine cannot create symbolic links
    // (CreateSymbolicLinkW fails), so that part waits for a Windows machine (docs/windows.md).

    const auto now = std::filesystem::file_time_type::clock::now();
    std::filesystem::last_write_time(nested / "entry", now - std::chrono::hours(2));
    TouchCacheFile(folder, "entry");
    Check(std::filesystem::last_write_time(nested / "entry") > now - std::chrono::minutes(5),
          "a touch marks the file as just used");

    std::ofstream(nested / "entry.tmp.1.2.3") << "old";
    std::ofstream(nested / "entry.tmp.4.5.6") << "fresh";
    std::filesystem::last_write_time(nested / "entry.tmp.1.2.3", now - std::chrono::hours(2));
    RemoveStaleTemporaries(folder);
    Check(!std::filesystem::exists(nested / "entry.tmp.1.2.3"), "a temporary older than an hour is removed");
    Check(std::filesystem::exists(nested / "entry.tmp.4.5.6"), "a fresh one is kept");
  }
  Check(WriteFileAtomically(dir / "dump" / "file", "dumped"), "dump_dir's writes make their folders");

  uint64_t other = 0;
  std::thread([&] { other = platform::ThreadId(); }).join();
  Check(other != 0 && other != platform::ThreadId(), "threads have their own ids");
  Check(platform::ProcessId() != 0, "the process has an id");

  std::filesystem::remove_all(dir);
  return failures == 0 ? 0 : 1;
}
