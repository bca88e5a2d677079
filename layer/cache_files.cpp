#include "cache_files.h"

#include <atomic>
#include <cerrno>
#include <chrono>

#include "build_id.h"  // generated: COOPMAT_BUILD_ID

namespace coopmat::layer {
namespace {

// Unique per process, thread and call: concurrent writers never share a temporary.
std::string TemporaryName(const std::string& name) {
  static std::atomic<uint64_t> counter{0};
  return name + ".tmp." + std::to_string(platform::ProcessId()) + "." + std::to_string(platform::ThreadId()) + "." +
         std::to_string(counter.fetch_add(1));
}

bool MakePrivateDirectory(const std::filesystem::path& dir) {
  std::error_code ec;
  if (std::filesystem::is_directory(dir, ec)) return true;
  if (!dir.parent_path().empty() && dir.parent_path() != dir) MakePrivateDirectory(dir.parent_path());
  if (!platform::CreatePrivateDirectory(dir)) return false;
  return std::filesystem::is_directory(dir, ec);
}

}  // namespace

const char* BuildId() { return COOPMAT_BUILD_ID; }

std::filesystem::path CacheDirectory() {
  const std::filesystem::path base = platform::UserCacheBase();
  return base.empty() ? base : base / "coopmat-maintenance1";
}

platform::TrustedFolder OpenCacheDirectory() { return platform::TrustedFolder::Open(CacheDirectory()); }

std::optional<std::string> ReadCacheFile(const platform::TrustedFolder& folder, const std::string& name, size_t maxBytes) {
  return folder.Read(name, maxBytes);
}

bool WriteCacheFileAtomically(const platform::TrustedFolder& folder, const std::string& name, std::string_view bytes) {
  const std::string temporary = TemporaryName(name);
  if (!folder.WriteNew(temporary, bytes)) return false;  // errno says why; nothing left
  if (folder.Rename(temporary, name)) return true;
  const int error = errno;  // what failed, for the caller's message, not the removal's
  folder.Remove(temporary);
  errno = error;
  return false;
}

bool WriteFileAtomically(const std::filesystem::path& path, std::string_view bytes) {
  if (!MakePrivateDirectory(path.parent_path())) return false;
  std::filesystem::path temporary = path.parent_path() / TemporaryName(path.filename().string());
  if (!platform::WriteNewFile(temporary, bytes)) return false;  // errno says why; nothing left
  if (platform::RenameOver(temporary, path)) return true;
  const int error = errno;
  std::error_code ec;
  std::filesystem::remove(temporary, ec);
  errno = error;
  return false;
}

void TouchCacheFile(const platform::TrustedFolder& folder, const std::string& name) {
  folder.Touch(name);  // best effort: a read-only cache stays usable
}

void RemoveStaleTemporaries(const platform::TrustedFolder& folder) {
  const auto limit = std::chrono::system_clock::now() - std::chrono::hours(1);
  for (const platform::TrustedFolder::Entry& entry : folder.List())
    if (entry.name.find(".tmp.") != std::string::npos && entry.kind == platform::TrustedFolder::Entry::Kind::File &&
        entry.modified < limit)
      folder.Remove(entry.name);
}

}  // namespace coopmat::layer
