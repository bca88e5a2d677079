// The layer's files in the user's cache (layouts, lowered SPIR-V): where they live
// and the one way they are read and written. A cache is a trust boundary: entries
// are regular files only, opened without following links, readable by the user
// alone, written to an exclusive temporary file and renamed into place whole.
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace coopmat::layer {

// The build identity every cache key, file name and header carries: a hash of the
// layer's and the lowering library's sources (generated at build time), so an
// upgraded or rebuilt layer never uses what an older one wrote.
const char* BuildId();

// $XDG_CACHE_HOME/coopmat-maintenance1, or $HOME/.cache/coopmat-maintenance1; a
// relative XDG_CACHE_HOME is ignored (the XDG spec: it would depend on the working
// folder). Empty when there is no absolute base.
std::filesystem::path CacheDirectory();

// Creates `dir` (and its parents) for the layer's own use: folders the layer creates
// are 0700. False when it does not exist as a folder afterwards.
bool MakePrivateDirectory(const std::filesystem::path& dir);

// Whether `dir` and every folder above it up to `top` (both included) may be trusted
// with cache entries: folders, not links, of this user, that no one else may write
// (platform::IsPrivateDirectory). A folder that existed before the layer, planted or
// loosened by someone else, is not (review 130c39d finding 6).
// With `missingPasses`, a folder not there yet passes (the layer makes it 0700), as does
// a file where a folder should be (nothing can be written there).
bool IsPrivateFolderChain(const std::filesystem::path& top, const std::filesystem::path& dir, bool missingPasses = false);

// The whole content of a regular file of at most maxBytes, or nullopt (missing, a
// link, a FIFO or any other non-regular file, too large, a read error). Never blocks
// on a special file.
std::optional<std::string> ReadCacheFile(const std::filesystem::path& path, size_t maxBytes);

// Writes `bytes` to a new exclusive temporary file (0600, never following a link)
// beside `path`, flushes it to disk and renames it over `path`: readers see the old
// file or the new one, whole. False (and no temporary left, errno saying why) on any failure.
bool WriteCacheFileAtomically(const std::filesystem::path& path, std::string_view bytes);

// Marks a cache file as just used (its modification time: least-recently-used
// eviction across processes). Never follows a link; failures are ignored.
void TouchCacheFile(const std::filesystem::path& path);

// What a build or a device no longer in use left in the cache (another build's lowered
// folder, a layout file of another build, driver version or subgroup size) goes once
// nothing has used it for this long. Two builds used in turn (a distribution's package
// and a developer's, a host's and a runtime's sharing ~/.cache) each keep theirs.
constexpr auto kUnusedCacheKept = std::chrono::hours(24 * 30);

// Removes temporary files ("*.tmp.*") older than an hour from `dir`: what writers
// that died mid-write left behind.
void RemoveStaleTemporaries(const std::filesystem::path& dir);

}  // namespace coopmat::layer
