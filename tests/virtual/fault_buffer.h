// The virtual device's fault buffer (rewrite.h's faults): host-visible memory on the
// device below, whose device address every rewritten pipeline writes its fault records
// to. The layer reads the records after the app's waits and logs a `fault` line for each
// kind of fault at each site of each pipeline.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace coopmat::virt {

class FaultBuffer {
 public:
  // Allocates and maps it on `device` (which has bufferDeviceAddress enabled); on failure
  // Ok() is false and Error() says why.
  FaultBuffer(VkDevice device, PFN_vkGetDeviceProcAddr gdpa, const VkPhysicalDeviceMemoryProperties& memory);
  ~FaultBuffer();
  FaultBuffer(const FaultBuffer&) = delete;
  FaultBuffer& operator=(const FaultBuffer&) = delete;

  bool Ok() const { return words_ != nullptr; }
  const std::string& Error() const { return error_; }
  uint64_t Address() const { return address_; }
  // A number for a pipeline about to be rewritten, then what it is and its fault sites.
  uint32_t NewPipeline();
  void Describe(uint32_t pipeline, std::string where, std::vector<std::string> sites);
  // The `fault` lines of the records written since the last call.
  std::vector<std::string> TakeNewFaults();

 private:
  struct Pipeline {
    std::string where;
    std::vector<std::string> sites;
  };
  std::string SiteName(const Pipeline* pipeline, uint32_t site) const;

  VkDevice device_;
  PFN_vkGetDeviceProcAddr gdpa_;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  uint32_t* words_ = nullptr;
  uint64_t address_ = 0;
  uint32_t seen_ = 0;  // records already reported
  std::string error_;
  std::vector<Pipeline> pipelines_;
};

// Enables bufferDeviceAddress in a device create info for one call (the app's own feature
// struct, or one put first in the chain of `info`, a copy of the app's) and restores it after.
class BufferDeviceAddressEnabled {
 public:
  explicit BufferDeviceAddressEnabled(VkDeviceCreateInfo& info);
  ~BufferDeviceAddressEnabled() { if (flag_) *flag_ = old_; }
  BufferDeviceAddressEnabled(const BufferDeviceAddressEnabled&) = delete;
  BufferDeviceAddressEnabled& operator=(const BufferDeviceAddressEnabled&) = delete;

 private:
  VkPhysicalDeviceBufferDeviceAddressFeatures own_{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_BUFFER_DEVICE_ADDRESS_FEATURES};
  VkBool32* flag_ = nullptr;
  VkBool32 old_ = VK_FALSE;
};

}  // namespace coopmat::virt
