// platform.h on Windows (built with MinGW-w64, run on Windows or Wine).
#include "platform.h"

#define WIN32_LEAN_AND_MEAN  // (libstdc++ defines NOMINMAX)
#include <fcntl.h>
#include <io.h>
#include <windows.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
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

bool IsPrivateDirectory(const std::filesystem::path& dir) {
  const DWORD attributes = GetFileAttributesW(dir.c_str());
  return attributes != INVALID_FILE_ATTRIBUTES && (attributes & FILE_ATTRIBUTE_DIRECTORY) &&
         !(attributes & FILE_ATTRIBUTE_REPARSE_POINT);
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
