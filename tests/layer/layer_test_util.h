// Helpers shared by the layer test files (and the AMD lane's): environment
// variables for one scope, the KHR property list, the fake driver layer
// (tests/layer/fake_driver_layer.cpp) and what it records.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
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

inline std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("coopmat-test-" + std::to_string(getpid()) + "-" + name)).string();
}

}  // namespace layertest
