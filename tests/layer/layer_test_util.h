// Helpers shared by the layer test files (and the AMD lane's): environment
// variables for one scope, the KHR property list, the fake driver layer
// (tests/layer/fake_driver_layer.cpp) and what it records.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch_test_macros.hpp>

#include "vk_context.h"

namespace layertest {

using cmtest::Instance;
using cmtest::Message;

inline constexpr const char* kFakeDriverLayer = "VK_LAYER_COOPMAT_TEST_fake_driver";

// Sets an environment variable for one scope (the loader and the layer read the
// environment when an instance is created).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, hadOld_ = true;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (hadOld_) setenv(name_, old_.c_str(), 1);
    else unsetenv(name_);
  }

 private:
  const char* name_;
  std::string old_;
  bool hadOld_ = false;
};

#ifdef COOPMAT_FAKE_LAYER_DIR
// Puts the fake driver layer on the layer path next to ours.
inline ScopedEnv FakeDriverOnPath() {
  const char* current = std::getenv("VK_ADD_LAYER_PATH");
  return ScopedEnv("VK_ADD_LAYER_PATH", std::string(current ? current : "") + ":" + COOPMAT_FAKE_LAYER_DIR);
}
#endif

// The driver's KHR cooperative-matrix property list, every entry.
inline std::vector<VkCooperativeMatrixPropertiesKHR> KhrProperties(const Instance& instance) {
  auto query = instance.proc<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR>(
      "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR");
  REQUIRE(query);
  uint32_t count = 0;
  REQUIRE(query(instance.physicalDevice(), &count, nullptr) == VK_SUCCESS);
  std::vector<VkCooperativeMatrixPropertiesKHR> list(count, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR});
  REQUIRE(query(instance.physicalDevice(), &count, list.data()) == VK_SUCCESS);
  return list;
}

inline bool AnyMessageContains(const Instance& instance, const std::string& needle) {
  for (const Message& m : instance.messages()) {
    if (m.text.find(needle) != std::string::npos) return true;
  }
  return false;
}

inline size_t CountMessages(const Instance& instance, const std::string& needle) {
  size_t count = 0;
  for (const Message& m : instance.messages()) count += m.text.find(needle) != std::string::npos;
  return count;
}

// A string-valued setting of our layer for InstanceOptions::settings. The value is
// kept for the rest of the process (the layer reads it in vkCreateInstance).
inline VkLayerSettingEXT StringSetting(const char* key, const std::string& value) {
  static std::deque<std::string> values;
  static std::deque<const char*> pointers;
  pointers.push_back(values.emplace_back(value).c_str());
  return {cmtest::kLayerName, key, VK_LAYER_SETTING_TYPE_STRING_EXT, 1, &pointers.back()};
}

inline std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("coopmat-test-" + std::to_string(getpid()) + "-" + name)).string();
}

inline std::string ReadText(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// What this process writes to stderr (file descriptor 2) while it lives: the
// layer's "coopmat-maintenance1: <level>: ..." lines.
class StderrCapture {
 public:
  StderrCapture() : path_(TempPath("stderr-" + std::to_string(reinterpret_cast<uintptr_t>(this)))) {
    std::fflush(stderr);
    saved_ = dup(2);
    const int fd = open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    REQUIRE((saved_ >= 0 && fd >= 0));
    dup2(fd, 2);
    close(fd);
  }
  ~StderrCapture() {
    std::fflush(stderr);
    dup2(saved_, 2);
    close(saved_);
    std::filesystem::remove(path_);
  }
  StderrCapture(const StderrCapture&) = delete;
  StderrCapture& operator=(const StderrCapture&) = delete;

  std::string Text() const {
    std::fflush(stderr);
    return ReadText(path_);
  }

 private:
  std::string path_;
  int saved_ = -1;
};

// Options for a test of the layer's own paths: force_enable, so that the layer keeps
// serving the device (and the test keeps testing it) should lavapipe ever list the
// extension itself.
inline cmtest::InstanceOptions ThroughTheLayer(std::vector<VkLayerSettingEXT> more = {}) {
  cmtest::InstanceOptions options;
  options.settings = std::move(more);
  options.settings.push_back(StringSetting("force_enable", "true"));
  return options;
}

// The last line of a log (the fake driver's FAKE_DRIVER_LOG) that starts with `prefix`; "" if none.
inline std::string LastLineStarting(const std::string& path, const std::string& prefix) {
  std::ifstream file(path);
  std::string line, last;
  while (std::getline(file, line))
    if (line.rfind(prefix, 0) == 0) last = line;
  return last;
}

// The one file under `dir` whose name ends with `ending`.
inline std::filesystem::path DumpedFile(const std::string& dir, const std::string& ending) {
  std::vector<std::filesystem::path> found;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.size() >= ending.size() && name.compare(name.size() - ending.size(), ending.size(), ending) == 0)
      found.push_back(entry.path());
  }
  INFO("files ending with " << ending << " in " << dir);
  REQUIRE(found.size() == 1);
  return found[0];
}


struct RecordedModule {
  uint64_t address;
  std::vector<uint32_t> words;
};

// What the fake driver layer recorded (FAKE_DRIVER_RECORD).
inline std::vector<RecordedModule> ReadRecord(const std::string& path) {
  std::vector<RecordedModule> out;
  std::ifstream in(path, std::ios::binary);
  uint64_t address = 0, count = 0;
  while (in.read(reinterpret_cast<char*>(&address), 8) && in.read(reinterpret_cast<char*>(&count), 8)) {
    RecordedModule m{address, std::vector<uint32_t>(count)};
    in.read(reinterpret_cast<char*>(m.words.data()), static_cast<std::streamsize>(count * 4));
    out.push_back(std::move(m));
  }
  return out;
}

// Whether a SPIR-V module declares `capability` (OpCapability before the first function).
inline bool DeclaresCapability(const std::vector<uint32_t>& words, uint32_t capability) {
  for (size_t pos = 5; pos < words.size();) {
    const uint32_t count = words[pos] >> 16, opcode = words[pos] & 0xffff;
    if (count == 0) break;
    if (opcode == 17 /*OpCapability*/ && pos + 1 < words.size() && words[pos + 1] == capability) return true;
    if (opcode == 54 /*OpFunction*/) break;
    pos += count;
  }
  return false;
}

}  // namespace layertest
