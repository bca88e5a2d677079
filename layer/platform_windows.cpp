// platform.h on Windows (built with MinGW-w64, run on Windows or Wine).
#include "platform.h"

#define WIN32_LEAN_AND_MEAN  // (libstdc++ defines NOMINMAX)
#include <fcntl.h>
#include <io.h>
#include <windows.h>
// After windows.h:
#include <aclapi.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

namespace coopmat::platform {

namespace {

// The errno callers report (strerror) for the last Win32 error.
void SetErrnoFromLastError() {
  switch (GetLastError()) {
    case ERROR_FILE_EXISTS:
    case ERROR_ALREADY_EXISTS: errno = EEXIST; break;
    case ERROR_FILE_NOT_FOUND:
    case ERROR_PATH_NOT_FOUND: errno = ENOENT; break;
    case ERROR_ACCESS_DENIED:
    case ERROR_SHARING_VIOLATION:
    case ERROR_LOCK_VIOLATION: errno = EACCES; break;
    case ERROR_DISK_FULL:
    case ERROR_HANDLE_DISK_FULL: errno = ENOSPC; break;
    case ERROR_NOT_ENOUGH_MEMORY:
    case ERROR_OUTOFMEMORY: errno = ENOMEM; break;
    default: errno = EIO; break;
  }
}

// Security attributes that give the current user alone full access (the 0700 and
// 0600 of the POSIX build), inherited by what is created inside, not by the parent's.
class PrivateSecurity {
 public:
  PrivateSecurity() {
    HANDLE token = nullptr;
    if (!OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &token)) return;
    DWORD size = 0;
    GetTokenInformation(token, TokenUser, nullptr, 0, &size);
    user_.resize(size);
    const bool haveUser = size && GetTokenInformation(token, TokenUser, user_.data(), size, &size);
    CloseHandle(token);
    if (!haveUser) return;
    PSID sid = reinterpret_cast<TOKEN_USER*>(user_.data())->User.Sid;
    acl_.resize(sizeof(ACL) + sizeof(ACCESS_ALLOWED_ACE) + GetLengthSid(sid));
    ACL* acl = reinterpret_cast<ACL*>(acl_.data());
    if (!InitializeAcl(acl, static_cast<DWORD>(acl_.size()), ACL_REVISION) ||
        !AddAccessAllowedAceEx(acl, ACL_REVISION, OBJECT_INHERIT_ACE | CONTAINER_INHERIT_ACE, FILE_ALL_ACCESS, sid) ||
        !InitializeSecurityDescriptor(&descriptor_, SECURITY_DESCRIPTOR_REVISION) ||
        !SetSecurityDescriptorDacl(&descriptor_, TRUE, acl, FALSE) ||
        !SetSecurityDescriptorControl(&descriptor_, SE_DACL_PROTECTED, SE_DACL_PROTECTED))
      return;
    attributes_.nLength = sizeof(attributes_);
    attributes_.lpSecurityDescriptor = &descriptor_;
    valid_ = true;
  }
  PrivateSecurity(const PrivateSecurity&) = delete;
  PrivateSecurity& operator=(const PrivateSecurity&) = delete;
  // Null when the user's SID could not be read: the object then inherits its folder's access.
  SECURITY_ATTRIBUTES* get() { return valid_ ? &attributes_ : nullptr; }

 private:
  std::vector<unsigned char> user_;  // TOKEN_USER: the SID points into it
  std::vector<unsigned char> acl_;
  SECURITY_DESCRIPTOR descriptor_{};
  SECURITY_ATTRIBUTES attributes_{};
  bool valid_ = false;
};

class Handle {
 public:
  explicit Handle(HANDLE handle) : handle_(handle) {}
  ~Handle() {
    if (valid()) CloseHandle(handle_);
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  bool valid() const { return handle_ != INVALID_HANDLE_VALUE; }
  HANDLE get() const { return handle_; }
  // Closes now: a failure to close is a failure to write.
  bool Close() {
    const bool ok = CloseHandle(handle_);
    handle_ = INVALID_HANDLE_VALUE;
    return ok;
  }

 private:
  HANDLE handle_;
};

// Readers let writers rename over and evict the file while they hold it (POSIX semantics).
constexpr DWORD kShareAll = FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE;

}  // namespace

std::filesystem::path UserCacheBase() {
  const wchar_t* base = _wgetenv(L"LOCALAPPDATA");
  if (!base || !*base) return {};
  std::filesystem::path path(base);
  return path.is_absolute() ? path : std::filesystem::path();
}

// Windows has no setuid: a process's privileges are its token's, which its caller chose.
bool PrivilegedProcess() { return false; }

bool SetEnvironment(const char* name, const char* value) {
  // _putenv_s updates the C runtime's copy (getenv) and the process's (the loader's
  // GetEnvironmentVariable); an empty value removes the variable.
  return _putenv_s(name, value ? value : "") == 0;
}

uint64_t ProcessId() { return GetCurrentProcessId(); }
uint64_t ThreadId() { return GetCurrentThreadId(); }

bool CreatePrivateDirectory(const std::filesystem::path& dir) {
  PrivateSecurity security;
  return CreateDirectoryW(dir.c_str(), security.get()) || GetLastError() == ERROR_ALREADY_EXISTS;
}

namespace {

// Whether `owner` is this process's user, or the owner it gives what it creates (an
// elevated administrator's files belong to the Administrators group).
bool IsOwnSid(PSID owner) {
  HANDLE token = nullptr;
  if (!OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &token)) return false;
  bool own = false;
  for (TOKEN_INFORMATION_CLASS kind : {TokenUser, TokenOwner}) {
    DWORD size = 0;
    GetTokenInformation(token, kind, nullptr, 0, &size);
    std::vector<unsigned char> buffer(size);
    if (!size || !GetTokenInformation(token, kind, buffer.data(), size, &size)) continue;
    const PSID sid = kind == TokenUser ? reinterpret_cast<TOKEN_USER*>(buffer.data())->User.Sid
                                       : reinterpret_cast<TOKEN_OWNER*>(buffer.data())->Owner;
    own = own || EqualSid(owner, sid);
  }
  CloseHandle(token);
  return own;
}

// Why the open folder `handle` is not one cache entries may be kept in, or "".
std::string NotOwnFolder(HANDLE handle) {
  BY_HANDLE_FILE_INFORMATION info{};
  if (!GetFileInformationByHandle(handle, &info)) return "cannot be read";
  if (info.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT) return "is a link";
  if (!(info.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY)) return "is not a folder";
  PSID owner = nullptr;
  PSECURITY_DESCRIPTOR descriptor = nullptr;
  if (GetSecurityInfo(handle, SE_FILE_OBJECT, OWNER_SECURITY_INFORMATION, &owner, nullptr, nullptr, nullptr,
                      &descriptor) != ERROR_SUCCESS)
    return "has an owner that cannot be read";
  const bool own = owner && IsOwnSid(owner);
  LocalFree(descriptor);
  return own ? "" : "is another user's";
}

void CreateMissingFolders(const std::filesystem::path& dir) {
  if (CreatePrivateDirectory(dir) || !dir.has_relative_path()) return;
  CreateMissingFolders(dir.parent_path());
  CreatePrivateDirectory(dir);
}

std::string Describe(const std::filesystem::path& path, const std::string& what) { return path.string() + " " + what; }

}  // namespace

void TrustedFolder::Close(std::intptr_t handle) noexcept {
  if (handle != kNone) CloseHandle(reinterpret_cast<HANDLE>(handle));
}

// %LOCALAPPDATA% is in the user's profile; Windows has no sticky bit to judge a parent by,
// so the parent is not checked: the folder itself is held open and cannot be moved away.
TrustedFolder TrustedFolder::Open(const std::filesystem::path& path) {
  if (path.empty()) return {};
  const std::filesystem::path folder = path.has_filename() ? path : path.parent_path();  // no trailing separator
  if (!folder.is_absolute() || !folder.has_relative_path()) return {kNone, path, Describe(path, "is not an absolute folder path")};
  CreateMissingFolders(folder.parent_path());
  return OpenChild(kNone, folder.filename().string(), folder);
}

TrustedFolder TrustedFolder::Sub(const std::string& name) const {
  if (!valid()) return {kNone, path_ / name, why_};
  return OpenChild(handle_, name, path_ / name);
}

TrustedFolder TrustedFolder::OpenChild(std::intptr_t, const std::string& name, std::filesystem::path path) {
  if (name.empty() || name == "." || name == ".." || name.find_first_of("/\\:") != std::string::npos)
    return {kNone, path, Describe(path, "is not a folder name")};
  if (!CreatePrivateDirectory(path)) return {kNone, path, "cannot create " + path.string()};
  // No FILE_SHARE_DELETE: while held, the folder cannot be renamed or removed, so its path
  // keeps naming it. FILE_FLAG_OPEN_REPARSE_POINT: a link is opened as itself, and refused.
  const HANDLE handle = CreateFileW(path.c_str(), READ_CONTROL | FILE_READ_ATTRIBUTES | FILE_WRITE_ATTRIBUTES,
                                    FILE_SHARE_READ | FILE_SHARE_WRITE, nullptr, OPEN_EXISTING,
                                    FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT, nullptr);
  if (handle == INVALID_HANDLE_VALUE) return {kNone, path, "cannot open " + path.string()};
  if (const std::string why = NotOwnFolder(handle); !why.empty()) {
    CloseHandle(handle);
    return {kNone, path, Describe(path, why)};
  }
  return {reinterpret_cast<std::intptr_t>(handle), std::move(path), {}};
}

std::optional<std::string> TrustedFolder::Read(const std::string& name, size_t maxBytes) const {
  return valid() ? ReadRegularFile(path_ / name, maxBytes) : std::nullopt;
}

bool TrustedFolder::WriteNew(const std::string& name, std::string_view bytes) const {
  if (valid()) return WriteNewFile(path_ / name, bytes);
  errno = EBADF;
  return false;
}

bool TrustedFolder::Rename(const std::string& from, const std::string& to) const {
  if (valid()) return RenameOver(path_ / from, path_ / to);
  errno = EBADF;
  return false;
}

bool TrustedFolder::Remove(const std::string& name) const {
  // DeleteFileW removes a link itself, not what it names.
  return valid() && DeleteFileW((path_ / name).c_str());
}

void TrustedFolder::RemoveFolder(const std::string& name) const {
  std::error_code ec;  // remove_all removes links, never what they name
  if (valid() && !name.empty() && name != "." && name != "..") std::filesystem::remove_all(path_ / name, ec);
}

void TrustedFolder::Touch(const std::string& name) const {
  if (!valid()) return;
  if (!name.empty()) return TouchFile(path_ / name);
  FILETIME now;
  GetSystemTimeAsFileTime(&now);
  SetFileTime(reinterpret_cast<HANDLE>(handle_), nullptr, nullptr, &now);
}

std::vector<TrustedFolder::Entry> TrustedFolder::List() const {
  std::vector<Entry> entries;
  if (!valid()) return entries;
  WIN32_FIND_DATAW found{};
  const HANDLE search = FindFirstFileW((path_ / L"*").c_str(), &found);
  if (search == INVALID_HANDLE_VALUE) return entries;
  do {
    Entry entry;
    entry.name = std::filesystem::path(found.cFileName).string();
    if (entry.name == "." || entry.name == "..") continue;
    const DWORD attributes = found.dwFileAttributes;
    entry.kind = (attributes & FILE_ATTRIBUTE_REPARSE_POINT) ? Entry::Kind::Other
                 : (attributes & FILE_ATTRIBUTE_DIRECTORY)   ? Entry::Kind::Folder
                                                             : Entry::Kind::File;
    entry.bytes = (static_cast<uint64_t>(found.nFileSizeHigh) << 32) | found.nFileSizeLow;
    // FILETIME: 100 ns ticks since 1601; the system clock's epoch is 1970.
    const uint64_t ticks = (static_cast<uint64_t>(found.ftLastWriteTime.dwHighDateTime) << 32) |
                           found.ftLastWriteTime.dwLowDateTime;
    const auto since1601 = std::chrono::duration<int64_t, std::ratio<1, 10000000>>(static_cast<int64_t>(ticks));
    entry.modified = std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(since1601 - std::chrono::seconds(11644473600)));
    entries.push_back(std::move(entry));
  } while (FindNextFileW(search, &found));
  FindClose(search);
  return entries;
}

std::optional<std::string> ReadRegularFile(const std::filesystem::path& path, size_t maxBytes) {
  // FILE_FLAG_OPEN_REPARSE_POINT: a link (symbolic or junction) is opened as itself and
  // refused below. A folder does not open without FILE_FLAG_BACKUP_SEMANTICS.
  Handle file(CreateFileW(path.c_str(), GENERIC_READ, kShareAll, nullptr, OPEN_EXISTING,
                          FILE_ATTRIBUTE_NORMAL | FILE_FLAG_OPEN_REPARSE_POINT, nullptr));
  if (!file.valid()) return std::nullopt;
  BY_HANDLE_FILE_INFORMATION info{};
  if (GetFileType(file.get()) != FILE_TYPE_DISK || !GetFileInformationByHandle(file.get(), &info) ||
      (info.dwFileAttributes & (FILE_ATTRIBUTE_REPARSE_POINT | FILE_ATTRIBUTE_DIRECTORY | FILE_ATTRIBUTE_DEVICE)))
    return std::nullopt;
  const uint64_t size = (static_cast<uint64_t>(info.nFileSizeHigh) << 32) | info.nFileSizeLow;
  if (size > maxBytes) return std::nullopt;
  std::string bytes(static_cast<size_t>(size), '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    const DWORD want = static_cast<DWORD>(std::min<size_t>(bytes.size() - done, 1u << 30));
    DWORD got = 0;
    if (!ReadFile(file.get(), bytes.data() + done, want, &got, nullptr) || got == 0) return std::nullopt;
    done += got;
  }
  char extra;
  DWORD got = 0;
  if (!ReadFile(file.get(), &extra, 1, &got, nullptr) || got != 0) return std::nullopt;  // it grew meanwhile
  return bytes;
}

bool WriteNewFile(const std::filesystem::path& path, std::string_view bytes) {
  // CREATE_NEW fails on any existing name, a link included (never written through).
  PrivateSecurity security;
  Handle file(CreateFileW(path.c_str(), GENERIC_WRITE, 0, security.get(), CREATE_NEW,
                          FILE_ATTRIBUTE_NORMAL | FILE_FLAG_OPEN_REPARSE_POINT, nullptr));
  if (!file.valid()) {
    SetErrnoFromLastError();
    return false;
  }
  size_t done = 0;
  bool ok = true;
  while (ok && done < bytes.size()) {
    const DWORD want = static_cast<DWORD>(std::min<size_t>(bytes.size() - done, 1u << 30));
    DWORD wrote = 0;
    ok = WriteFile(file.get(), bytes.data() + done, want, &wrote, nullptr) && wrote > 0;
    done += wrote;
  }
  ok = ok && FlushFileBuffers(file.get());
  if (!ok) SetErrnoFromLastError();
  if (!file.Close() && ok) {
    SetErrnoFromLastError();
    ok = false;
  }
  if (!ok) {
    const int error = errno;
    DeleteFileW(path.c_str());
    errno = error;
  }
  return ok;
}

bool RenameOver(const std::filesystem::path& from, const std::filesystem::path& to) {
  if (MoveFileExW(from.c_str(), to.c_str(), MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH)) return true;
  SetErrnoFromLastError();
  return false;
}

void TouchFile(const std::filesystem::path& path) {
  Handle file(CreateFileW(path.c_str(), FILE_WRITE_ATTRIBUTES, kShareAll, nullptr, OPEN_EXISTING,
                          FILE_FLAG_OPEN_REPARSE_POINT, nullptr));
  if (!file.valid()) return;
  FILETIME now;
  GetSystemTimeAsFileTime(&now);
  SetFileTime(file.get(), nullptr, nullptr, &now);
}

SilencedStderr::SilencedStderr() : saved_(_dup(_fileno(stderr))), null_(_open("NUL", _O_WRONLY)) {
  std::fflush(stderr);
  if (null_ >= 0) _dup2(null_, _fileno(stderr));
}

SilencedStderr::~SilencedStderr() {
  std::fflush(stderr);
  if (saved_ >= 0) _dup2(saved_, _fileno(stderr));
  if (null_ >= 0) _close(null_);
  if (saved_ >= 0) _close(saved_);
}

}  // namespace coopmat::platform
