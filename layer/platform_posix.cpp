// platform.h on Linux and other POSIX systems.
#include "platform.h"

#include <fcntl.h>
#include <sys/stat.h>
#ifdef __linux__
#include <sys/auxv.h>
#endif
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace coopmat::platform {

std::filesystem::path UserCacheBase() {
  // secure_getenv: a setuid program loading the layer does not take its cache folder from the caller.
  if (const char* xdg = secure_getenv("XDG_CACHE_HOME"); xdg && *xdg == '/') return xdg;
  if (const char* home = secure_getenv("HOME"); home && *home == '/') return std::filesystem::path(home) / ".cache";
  return {};
}

bool PrivilegedProcess() {
#ifdef __linux__
  return ::getauxval(AT_SECURE) != 0;
#else
  return ::getuid() != ::geteuid() || ::getgid() != ::getegid();
#endif
}

bool SetEnvironment(const char* name, const char* value) {
  return (value ? ::setenv(name, value, 1) : ::unsetenv(name)) == 0;
}

uint64_t ProcessId() { return static_cast<uint64_t>(::getpid()); }
uint64_t ThreadId() { return static_cast<uint64_t>(::gettid()); }

bool CreatePrivateDirectory(const std::filesystem::path& dir) {
  return ::mkdir(dir.c_str(), 0700) == 0 || errno == EEXIST;
}

bool IsPrivateDirectory(const std::filesystem::path& dir) {
  struct stat info{};
  return ::lstat(dir.c_str(), &info) == 0 && S_ISDIR(info.st_mode) && info.st_uid == ::geteuid() &&
         (info.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

std::optional<std::string> ReadRegularFile(const std::filesystem::path& path, size_t maxBytes) {
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

bool WriteNewFile(const std::filesystem::path& path, std::string_view bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return false;  // errno says why
  size_t done = 0;
  bool ok = true;
  while (ok && done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += static_cast<size_t>(n);
  }
  // A full disk shows at fsync or close as well as at write.
  ok = ok && ::fsync(fd) == 0;
  int error = errno;  // the write's or fsync's, not close's
  if (::close(fd) != 0 && ok) {
    error = errno;
    ok = false;
  }
  if (!ok) {
    ::unlink(path.c_str());
    errno = error;
  }
  return ok;
}

bool RenameOver(const std::filesystem::path& from, const std::filesystem::path& to) {
  return ::rename(from.c_str(), to.c_str()) == 0;
}

void TouchFile(const std::filesystem::path& path) {
  ::utimensat(AT_FDCWD, path.c_str(), nullptr, AT_SYMLINK_NOFOLLOW);
}

SilencedStderr::SilencedStderr() : saved_(::dup(STDERR_FILENO)), null_(::open("/dev/null", O_WRONLY | O_CLOEXEC)) {
  std::fflush(stderr);
  if (null_ >= 0) ::dup2(null_, STDERR_FILENO);
}

SilencedStderr::~SilencedStderr() {
  std::fflush(stderr);
  if (saved_ >= 0) ::dup2(saved_, STDERR_FILENO);
  if (null_ >= 0) ::close(null_);
  if (saved_ >= 0) ::close(saved_);
}

}  // namespace coopmat::platform
