// platform.h on Linux and other POSIX systems.
#include "platform.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#ifdef __linux__
#include <sys/auxv.h>
#endif
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

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

namespace {

// `dir` and its missing parents, 0700. What is trusted is decided on the opened handles,
// not here.
void CreateMissingFolders(const std::filesystem::path& dir) {
  if (::mkdir(dir.c_str(), 0700) == 0 || errno != ENOENT || !dir.has_relative_path()) return;
  CreateMissingFolders(dir.parent_path());
  ::mkdir(dir.c_str(), 0700);
}

std::string Describe(const std::filesystem::path& path, const std::string& what) { return path.string() + " " + what; }

std::string CannotOpen(const std::filesystem::path& path, int error) {
  return "cannot open " + path.string() + " (" + std::strerror(error) + ")";
}

// Why a folder cache entries would be kept in is not the user's own, or "".
std::string NotOwnFolder(const struct stat& info) {
  if (!S_ISDIR(info.st_mode)) return "is not a folder";
  if (info.st_uid != ::geteuid()) return "is another user's";
  if (info.st_mode & (S_IWGRP | S_IWOTH)) return "is writable by others";
  return {};
}

// Why others could rename what the folder `info` holds (and so swap a cache folder in
// it), or "". Sticky (/tmp): only an entry's owner may rename or remove it. Group write
// by the user's own primary group is not others' (a user private group with umask 002).
std::string OthersMayRenameIn(const struct stat& info) {
  if (info.st_uid != ::geteuid() && info.st_uid != 0) return "is another user's";
  if (info.st_mode & S_ISVTX) return {};
  const bool others = (info.st_mode & S_IWOTH) || ((info.st_mode & S_IWGRP) && info.st_gid != ::getegid());
  return others ? "is writable by others and not sticky" : "";
}

std::optional<std::string> ReadAt(int dir, const char* name, size_t maxBytes) {
  // O_NONBLOCK: opening a FIFO planted at the name must not wait for a writer.
  const int fd = ::openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
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

bool WriteNewAt(int dir, const char* name, std::string_view bytes) {
  const int fd = ::openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
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
    ::unlinkat(dir, name, 0);
    errno = error;
  }
  return ok;
}

bool IsFolderAt(int dir, const char* name) {
  struct stat info{};
  return ::fstatat(dir, name, &info, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(info.st_mode);
}

// The names in the open folder `dir`, through a descriptor of its own (its own read
// position: threads may list the same folder at once).
std::vector<std::string> NamesIn(int dir) {
  std::vector<std::string> names;
  const int fd = ::openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return names;
  DIR* list = ::fdopendir(fd);
  if (!list) {
    ::close(fd);
    return names;
  }
  while (const dirent* entry = ::readdir(list))
    if (std::strcmp(entry->d_name, ".") != 0 && std::strcmp(entry->d_name, "..") != 0) names.emplace_back(entry->d_name);
  ::closedir(list);
  return names;
}

void RemoveTreeAt(int dir, const char* name) {
  if (const int fd = ::openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC); fd >= 0) {
    for (const std::string& inside : NamesIn(fd)) {
      if (IsFolderAt(fd, inside.c_str())) RemoveTreeAt(fd, inside.c_str());
      else ::unlinkat(fd, inside.c_str(), 0);
    }
    ::close(fd);
  }
  ::unlinkat(dir, name, AT_REMOVEDIR);
}

}  // namespace

void TrustedFolder::Close(std::intptr_t handle) noexcept {
  if (handle != kNone) ::close(static_cast<int>(handle));
}

TrustedFolder TrustedFolder::Open(const std::filesystem::path& path) {
  if (path.empty()) return {};
  const std::filesystem::path folder = path.has_filename() ? path : path.parent_path();  // no trailing separator
  if (!folder.is_absolute() || !folder.has_relative_path()) return {kNone, path, Describe(path, "is not an absolute folder path")};
  const std::filesystem::path parentPath = folder.parent_path();
  CreateMissingFolders(parentPath);
  // A link there is followed: the folder it names is the one judged (and held).
  const int parent = ::open(parentPath.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (parent < 0) return {kNone, path, CannotOpen(parentPath, errno)};
  struct stat info{};
  std::string why = ::fstat(parent, &info) == 0 ? OthersMayRenameIn(info) : "cannot be read";
  TrustedFolder opened = why.empty() ? OpenChild(parent, folder.filename().string(), folder)
                                     : TrustedFolder(kNone, folder, Describe(parentPath, why));
  ::close(parent);
  return opened;
}

TrustedFolder TrustedFolder::Sub(const std::string& name) const {
  if (!valid()) return {kNone, path_ / name, why_};
  return OpenChild(handle_, name, path_ / name);
}

TrustedFolder TrustedFolder::OpenChild(std::intptr_t parent, const std::string& name, std::filesystem::path path) {
  const int dir = static_cast<int>(parent);
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos)
    return {kNone, path, Describe(path, "is not a folder name")};
  if (::mkdirat(dir, name.c_str(), 0700) != 0 && errno != EEXIST)
    return {kNone, path, "cannot create " + path.string() + " (" + std::strerror(errno) + ")"};
  const int fd = ::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    struct stat info{};
    const bool link = ::fstatat(dir, name.c_str(), &info, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(info.st_mode);
    return {kNone, path, link ? Describe(path, "is a link") : error == ENOTDIR ? Describe(path, "is not a folder") : CannotOpen(path, error)};
  }
  struct stat info{};
  const std::string why = ::fstat(fd, &info) == 0 ? NotOwnFolder(info) : "cannot be read";
  if (!why.empty()) {
    ::close(fd);
    return {kNone, path, Describe(path, why)};
  }
  return {fd, std::move(path), {}};
}

std::optional<std::string> TrustedFolder::Read(const std::string& name, size_t maxBytes) const {
  return valid() ? ReadAt(static_cast<int>(handle_), name.c_str(), maxBytes) : std::nullopt;
}

bool TrustedFolder::WriteNew(const std::string& name, std::string_view bytes) const {
  if (valid()) return WriteNewAt(static_cast<int>(handle_), name.c_str(), bytes);
  errno = EBADF;
  return false;
}

bool TrustedFolder::Rename(const std::string& from, const std::string& to) const {
  const int dir = static_cast<int>(handle_);
  if (valid()) return ::renameat(dir, from.c_str(), dir, to.c_str()) == 0;
  errno = EBADF;
  return false;
}

bool TrustedFolder::Remove(const std::string& name) const {
  return valid() && ::unlinkat(static_cast<int>(handle_), name.c_str(), 0) == 0;
}

void TrustedFolder::RemoveFolder(const std::string& name) const {
  if (valid() && !name.empty() && name != "." && name != "..") RemoveTreeAt(static_cast<int>(handle_), name.c_str());
}

void TrustedFolder::Touch(const std::string& name) const {
  if (!valid()) return;
  if (name.empty()) ::futimens(static_cast<int>(handle_), nullptr);
  else ::utimensat(static_cast<int>(handle_), name.c_str(), nullptr, AT_SYMLINK_NOFOLLOW);
}

std::vector<TrustedFolder::Entry> TrustedFolder::List() const {
  std::vector<Entry> entries;
  if (!valid()) return entries;
  const int dir = static_cast<int>(handle_);
  for (std::string& name : NamesIn(dir)) {
    struct stat info{};
    if (::fstatat(dir, name.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0) continue;  // gone meanwhile
    Entry entry;
    entry.name = std::move(name);
    entry.kind = S_ISREG(info.st_mode) ? Entry::Kind::File : S_ISDIR(info.st_mode) ? Entry::Kind::Folder : Entry::Kind::Other;
    entry.bytes = static_cast<uint64_t>(info.st_size);
    entry.modified = std::chrono::system_clock::time_point(std::chrono::duration_cast<std::chrono::system_clock::duration>(
        std::chrono::seconds(info.st_mtim.tv_sec) + std::chrono::nanoseconds(info.st_mtim.tv_nsec)));
    entries.push_back(std::move(entry));
  }
  return entries;
}

std::optional<std::string> ReadRegularFile(const std::filesystem::path& path, size_t maxBytes) {
  return ReadAt(AT_FDCWD, path.c_str(), maxBytes);
}

bool WriteNewFile(const std::filesystem::path& path, std::string_view bytes) {
  return WriteNewAt(AT_FDCWD, path.c_str(), bytes);
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
