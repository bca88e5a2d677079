#include "cache_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <thread>

#include "build_id.h"  // generated: COOPMAT_BUILD_ID

namespace coopmat::layer {

const char* BuildId() { return COOPMAT_BUILD_ID; }

std::filesystem::path CacheDirectory() {
  // secure_getenv: a setuid program loading the layer does not take its cache folder from the caller.
  if (const char* xdg = secure_getenv("XDG_CACHE_HOME"); xdg && *xdg == '/')
    return std::filesystem::path(xdg) / "coopmat-maintenance1";
  if (const char* home = secure_getenv("HOME"); home && *home == '/')
    return std::filesystem::path(home) / ".cache" / "coopmat-maintenance1";
  return {};
}

bool MakePrivateDirectory(const std::filesystem::path& dir) {
  std::error_code ec;
  if (std::filesystem::is_directory(dir, ec)) return true;
  if (!dir.parent_path().empty() && dir.parent_path() != dir) MakePrivateDirectory(dir.parent_path());
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return false;
  return std::filesystem::is_directory(dir, ec);
}

std::optional<std::string> ReadCacheFile(const std::filesystem::path& path, size_t maxBytes) {
  // O_NONBLOCK: opening a FIFO planted at the name must not wait for a writer.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat info{};
  std::optional<std::string> out;
  if (::fstat(fd, &info) == 0 && S_ISREG(info.st_mode) && static_cast<uint64_t>(info.st_size) <= maxBytes) {
    std::string bytes(static_cast<size_t>(info.st_size), '\0');
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    char extra;
    if (done == bytes.size() && ::read(fd, &extra, 1) == 0) out = std::move(bytes);  // it did not grow meanwhile
  }
  ::close(fd);
  return out;
}

bool WriteCacheFileAtomically(const std::filesystem::path& path, std::string_view bytes) {
  if (!MakePrivateDirectory(path.parent_path())) return false;
  // Unique per process, thread and call: concurrent writers never share a temporary.
  static std::atomic<uint64_t> counter{0};
  const std::filesystem::path temporary =
      path.string() + ".tmp." + std::to_string(::getpid()) + "." +
      std::to_string(std::hash<std::thread::id>()(std::this_thread::get_id())) + "." + std::to_string(counter.fetch_add(1));
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return false;  // errno says why
  size_t done = 0;
  bool ok = true;
  while (ok && done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += static_cast<size_t>(n);
  }
  // A full disk shows at fsync or close as well as at write: any failure discards the file.
  ok = ok && ::fsync(fd) == 0;
  ok = ::close(fd) == 0 && ok;
  ok = ok && ::rename(temporary.c_str(), path.c_str()) == 0;
  if (!ok) {
    const int error = errno;  // what failed, for the caller's message, not the unlink's
    ::unlink(temporary.c_str());
    errno = error;
  }
  return ok;
}

void TouchCacheFile(const std::filesystem::path& path) {
  ::utimensat(AT_FDCWD, path.c_str(), nullptr, AT_SYMLINK_NOFOLLOW);  // best effort: a read-only cache stays usable
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
