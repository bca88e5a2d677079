// What the layer and its tools need from the operating system, in one place:
// files, the user's cache folder, process and thread ids, the environment.
// platform_posix.cpp and platform_windows.cpp implement it; nothing else in the
// code base asks which system it runs on.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

// An entry point the Vulkan loader looks up by name in the layer's library.
#ifdef _WIN32
#define COOPMAT_EXPORT __declspec(dllexport)
#else
#define COOPMAT_EXPORT __attribute__((visibility("default")))
#endif

namespace coopmat::platform {

// The folder where the user's applications keep caches: $XDG_CACHE_HOME, or
// $HOME/.cache, an absolute path only (a relative one would depend on the working
// folder); on Windows %LOCALAPPDATA%. Empty when there is none. Read so that a
// setuid program does not take it from its caller.
std::filesystem::path UserCacheBase();

// Whether the process runs with privileges its caller may lack (setuid, setgid, file
// capabilities: AT_SECURE), where nothing the caller controls (environment, working
// folder) may steer the layer.
bool PrivilegedProcess();

// Sets (value non-null) or removes (null) an environment variable of this process,
// where the Vulkan loader reads it too. False on failure.
bool SetEnvironment(const char* name, const char* value);

uint64_t ProcessId();
uint64_t ThreadId();

// Creates one folder readable by the user alone (its parent must exist). True when
// it was created or already exists.
bool CreatePrivateDirectory(const std::filesystem::path& dir);

// A folder held open that cache entries may be kept in (review dbb465e finding 5): a
// folder, not a link, of this user, that no one else may write. Everything below it is
// reached through the handle, not its path again, so a folder swapped in at that path
// after the check is never read or written: POSIX opens, renames and removes relative to
// the descriptor (openat and its kin); Windows, which has no such calls, holds the folder
// open without FILE_SHARE_DELETE, so that it cannot be renamed or removed while in use.
// Movable; the handle closes with it.
class TrustedFolder {
 public:
  // What a folder holds: files and folders (never a link followed), their size and age.
  struct Entry {
    enum class Kind { File, Folder, Other };
    std::string name;
    Kind kind = Kind::Other;
    uint64_t bytes = 0;
    std::chrono::system_clock::time_point modified;
  };

  TrustedFolder() = default;  // none: what is cached stays in memory
  ~TrustedFolder() { Close(handle_); }
  TrustedFolder(TrustedFolder&& other) noexcept
      : handle_(std::exchange(other.handle_, kNone)), path_(std::move(other.path_)), why_(std::move(other.why_)) {}
  TrustedFolder& operator=(TrustedFolder&& other) noexcept {
    if (this != &other) {
      Close(std::exchange(handle_, std::exchange(other.handle_, kNone)));
      path_ = std::move(other.path_);
      why_ = std::move(other.why_);
    }
    return *this;
  }

  // Opens `path` (absolute), created 0700 with its missing parents when missing. Its
  // parent must be this user's or the administrator's, and, on POSIX, not writable by
  // others unless sticky (like /tmp; else they could move the folder away and put theirs
  // in its place); a parent that is a link is judged by the folder it names. Invalid,
  // with why(), when untrusted or it cannot be opened; invalid without a why() for an
  // empty path.
  static TrustedFolder Open(const std::filesystem::path& path);
  // The folder `name` (one component) inside this one, created 0700 when missing, held
  // and checked as Open does.
  TrustedFolder Sub(const std::string& name) const;

  bool valid() const { return handle_ != kNone; }
  const std::filesystem::path& path() const { return path_; }  // for messages and logs
  const std::string& why() const { return why_; }                // why it is not valid

  // The files named here are in this folder: one component, never a link followed.
  // The whole content of a regular file of at most maxBytes (ReadRegularFile).
  std::optional<std::string> Read(const std::string& name, size_t maxBytes) const;
  // WriteNewFile in this folder.
  bool WriteNew(const std::string& name, std::string_view bytes) const;
  // RenameOver within this folder.
  bool Rename(const std::string& from, const std::string& to) const;
  // Removes a file (a link is removed, not followed). False when it could not.
  bool Remove(const std::string& name) const;
  // Removes a folder and everything in it, never following a link. Best effort.
  void RemoveFolder(const std::string& name) const;
  // Sets the modification time of a file, or of this folder when `name` is empty, to now.
  void Touch(const std::string& name = {}) const;
  // What the folder holds, "." and ".." left out; empty when it cannot be read.
  std::vector<Entry> List() const;

 private:
  static constexpr std::intptr_t kNone = -1;  // POSIX: no descriptor; Windows: INVALID_HANDLE_VALUE
  // Closes a held folder (the platform's close); nothing for kNone.
  static void Close(std::intptr_t handle) noexcept;
  // Opens and checks the folder `name` in the open folder `parent` (created 0700 when
  // missing); `path` is its path, for messages (and, on Windows, for reaching it).
  static TrustedFolder OpenChild(std::intptr_t parent, const std::string& name, std::filesystem::path path);
  TrustedFolder(std::intptr_t handle, std::filesystem::path path, std::string why)
      : handle_(handle), path_(std::move(path)), why_(std::move(why)) {}
  std::intptr_t handle_ = kNone;  // POSIX: a descriptor; Windows: a HANDLE
  std::filesystem::path path_;
  std::string why_;
};

// The whole content of a regular file of at most maxBytes, or nullopt (missing, a
// link, a FIFO or any other non-regular file, too large, it grew while read, a read
// error). Never follows a link, never blocks on a special file.
std::optional<std::string> ReadRegularFile(const std::filesystem::path& path, size_t maxBytes);

// Creates `path`, which must not exist (a link there is not followed: the create
// fails), readable by the user alone, writes `bytes` and flushes them to disk. On
// any failure returns false with errno saying why, and removes what it created.
bool WriteNewFile(const std::filesystem::path& path, std::string_view bytes);

// Renames `from` over `to` in one step (readers see the old file or the new one),
// durably where the system offers it. False with errno set on failure.
bool RenameOver(const std::filesystem::path& from, const std::filesystem::path& to);

// Sets a file's modification time to now, without following a link. Best effort.
void TouchFile(const std::filesystem::path& path);

// While alive, this process's standard error goes nowhere (what a library prints
// there that the caller reports its own way).
class SilencedStderr {
 public:
  SilencedStderr();
  ~SilencedStderr();
  SilencedStderr(const SilencedStderr&) = delete;
  SilencedStderr& operator=(const SilencedStderr&) = delete;

 private:
  int saved_ = -1;
  int null_ = -1;
};

}  // namespace coopmat::platform
