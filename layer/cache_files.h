// The layer's files in the user's cache (layouts, lowered SPIR-V): where they live
// and the one way they are read and written. A cache is a trust boundary: entries are
// reached through a folder held open and checked once (platform::TrustedFolder), are
// regular files only, opened without following links, readable by the user alone,
// written to an exclusive temporary file and renamed into place whole.
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "platform.h"

namespace coopmat::layer {

// The build identity every cache key, file name and header carries: a hash of the
// layer's and the lowering library's sources (generated at build time), so an
// upgraded or rebuilt layer never uses what an older one wrote.
const char* BuildId();

// $XDG_CACHE_HOME/coopmat-maintenance1, or $HOME/.cache/coopmat-maintenance1; a
// relative XDG_CACHE_HOME is ignored (the XDG spec: it would depend on the working
// folder). Empty when there is no absolute base.
std::filesystem::path CacheDirectory();

// CacheDirectory() opened and checked (platform::TrustedFolder): what the layout files and
// the lowered folders are kept in, reached through its handle only. Invalid when there
// is no cache base; invalid with why() when it cannot be opened or trusted (the caller
// then keeps what it would cache in memory).
platform::TrustedFolder OpenCacheDirectory();

// The whole content of the regular file `name` in `folder`, of at most maxBytes, or
// nullopt (missing, a link, a FIFO or any other non-regular file, too large, a read
// error). Never blocks on a special file.
std::optional<std::string> ReadCacheFile(const platform::TrustedFolder& folder, const std::string& name, size_t maxBytes);

// Writes `bytes` to a new exclusive temporary file (0600, never following a link) in
// `folder`, flushes it to disk and renames it over `name`: readers see the old file or
// the new one, whole. False (and no temporary left, errno saying why) on any failure.
bool WriteCacheFileAtomically(const platform::TrustedFolder& folder, const std::string& name, std::string_view bytes);

// The same for a file the user named (dump_dir), not a cache: its folders are created
// (0700) and not checked.
bool WriteFileAtomically(const std::filesystem::path& path, std::string_view bytes);

// Marks a cache file (or, with no name, the folder) as just used: its modification time,
// for least-recently-used eviction across processes. Never follows a link; failures are
// ignored.
void TouchCacheFile(const platform::TrustedFolder& folder, const std::string& name = {});

// What a build or a device no longer in use left in the cache (another build's lowered
// folder, a layout file of another build, driver version or subgroup size) goes once
// nothing has used it for this long. Two builds used in turn (a distribution's package
// and a developer's, a host's and a runtime's sharing ~/.cache) each keep theirs.
constexpr auto kUnusedCacheKept = std::chrono::hours(24 * 30);

// Removes temporary files ("*.tmp.*") older than an hour from `folder`: what writers
// that died mid-write left behind.
void RemoveStaleTemporaries(const platform::TrustedFolder& folder);

}  // namespace coopmat::layer
