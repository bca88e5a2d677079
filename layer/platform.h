// What the layer and its tools need from the operating system, in one place:
// files, the user's cache folder, process and thread ids, the environment.
// platform_posix.cpp and platform_windows.cpp implement it; nothing else in the
// code base asks which system it runs on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

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

// Whether `dir` is a folder (not a link) of this user that no one else may write: what
// the layer keeps in it reaches the driver. POSIX: owner the effective user, no group
// or other write bit. Windows: a folder that is not a reparse point (its DACL, which
// the layer sets on folders it creates, is not checked).
bool IsPrivateDirectory(const std::filesystem::path& dir);

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
