#include "cache_files.h"

#include <atomic>
#include <cerrno>
#include <chrono>

#include "build_id.h"  // generated: COOPMAT_BUILD_ID
#include "platform.h"

namespace coopmat::layer {

const char* BuildId() { return COOPMAT_BUILD_ID; }

std::filesystem::path CacheDirectory() {
  const std::filesystem::path base = platform::UserCacheBase();
  return base.empty() ? base : base / "coopmat-maintenance1";
}

bool MakePrivateDirectory(const std::filesystem::path& dir) {
  std::error_code ec;
  if (std::filesystem::is_directory(dir, ec)) return true;
  if (!dir.parent_path().empty() && dir.parent_path() != dir) MakePrivateDirectory(dir.parent_path());
  if (!platform::CreatePrivateDirectory(dir)) return false;
  return std::filesystem::is_directory(dir, ec);
}

bool IsPrivateFolderChain(const std::filesystem::path& top, const std::filesystem::path& dir, bool missingPasses) {
  for (std::filesystem::path folder = dir;; folder = folder.parent_path()) {
    std::error_code ec;
    // (Not a folder or a link: nothing can be kept there, which writing finds out.)
    const auto type = std::filesystem::symlink_status(folder, ec).type();
    const bool missing = type != std::filesystem::file_type::directory && type != std::filesystem::file_type::symlink;
    if (!(missing && missingPasses) && !platform::IsPrivateDirectory(folder)) return false;
    if (folder == top || folder == folder.parent_path()) return true;
  }
}

std::optional<std::string> ReadCacheFile(const std::filesystem::path& path, size_t maxBytes) {
  return platform::ReadRegularFile(path, maxBytes);
}

bool WriteCacheFileAtomically(const std::filesystem::path& path, std::string_view bytes) {
  if (!MakePrivateDirectory(path.parent_path())) return false;
  // Unique per process, thread and call: concurrent writers never share a temporary.
  static std::atomic<uint64_t> counter{0};
  std::filesystem::path temporary = path;
  temporary += ".tmp." + std::to_string(platform::ProcessId()) + "." + std::to_string(platform::ThreadId()) + "." +
               std::to_string(counter.fetch_add(1));
  if (!platform::WriteNewFile(temporary, bytes)) return false;  // errno says why; nothing left
  if (platform::RenameOver(temporary, path)) return true;
  const int error = errno;  // what failed, for the caller's message, not the removal's
  std::error_code ec;
  std::filesystem::remove(temporary, ec);
  errno = error;
  return false;
}

void TouchCacheFile(const std::filesystem::path& path) {
  platform::TouchFile(path);  // best effort: a read-only cache stays usable
}

void RemoveStaleTemporaries(const std::filesystem::path& dir) {
  std::error_code ec;
  const auto limit = std::filesystem::file_time_type::clock::now() - std::chrono::hours(1);
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.find(".tmp.") == std::string::npos || !it->is_regular_file(ec)) continue;
    if (it->last_write_time(ec) < limit) std::filesystem::remove(it->path(), ec);
  }
}

}  // namespace coopmat::layer
