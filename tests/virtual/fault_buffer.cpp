// FaultBuffer (fault_buffer.h). Lavapipe's device addresses are the host addresses of
// the memory, so the rewritten code's atomics land in the mapping read here.
#include "fault_buffer.h"

#include <atomic>
#include <cstring>
#include <tuple>

#include "rewrite.h"

namespace coopmat::virt {

template <typename Fn> Fn DeviceProc(PFN_vkGetDeviceProcAddr gdpa, VkDevice device, const char* name) {
  return reinterpret_cast<Fn>(gdpa(device, name));
}

FaultBuffer::FaultBuffer(VkDevice device, PFN_vkGetDeviceProcAddr gdpa, const VkPhysicalDeviceMemoryProperties& memory)
    : device_(device), gdpa_(gdpa) {
  auto address = DeviceProc<PFN_vkGetBufferDeviceAddress>(gdpa, device, "vkGetBufferDeviceAddress");
  if (!address) address = DeviceProc<PFN_vkGetBufferDeviceAddress>(gdpa, device, "vkGetBufferDeviceAddressKHR");
  if (!address) {
    error_ = "the driver gives no vkGetBufferDeviceAddress (an application of Vulkan 1.0 or 1.1?)";
    return;
  }
  const VkDeviceSize size = VkDeviceSize(faults::kBufferWords) * 4;
  VkBufferCreateInfo bufferInfo{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bufferInfo.size = size;
  bufferInfo.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT;
  if (DeviceProc<PFN_vkCreateBuffer>(gdpa, device, "vkCreateBuffer")(device, &bufferInfo, nullptr, &buffer_) != VK_SUCCESS) {
    error_ = "vkCreateBuffer failed";
    return;
  }
  VkMemoryRequirements needs{};
  DeviceProc<PFN_vkGetBufferMemoryRequirements>(gdpa, device, "vkGetBufferMemoryRequirements")(device, buffer_, &needs);
  const VkMemoryPropertyFlags wanted = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  uint32_t type = 0;
  while (type < memory.memoryTypeCount &&
         (!(needs.memoryTypeBits & (1u << type)) || (memory.memoryTypes[type].propertyFlags & wanted) != wanted))
    ++type;
  if (type == memory.memoryTypeCount) {
    error_ = "no host-visible coherent memory type";
    return;
  }
  VkMemoryAllocateFlagsInfo flags{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO};
  flags.flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT;
  VkMemoryAllocateInfo allocation{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, &flags};
  allocation.allocationSize = needs.size;
  allocation.memoryTypeIndex = type;
  void* mapped = nullptr;
  if (DeviceProc<PFN_vkAllocateMemory>(gdpa, device, "vkAllocateMemory")(device, &allocation, nullptr, &memory_) != VK_SUCCESS ||
      DeviceProc<PFN_vkBindBufferMemory>(gdpa, device, "vkBindBufferMemory")(device, buffer_, memory_, 0) != VK_SUCCESS ||
      DeviceProc<PFN_vkMapMemory>(gdpa, device, "vkMapMemory")(device, memory_, 0, size, 0, &mapped) != VK_SUCCESS) {
    error_ = "allocating, binding or mapping its memory failed";
    return;
  }
  std::memset(mapped, 0, size);
  VkBufferDeviceAddressInfo info{VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO};
  info.buffer = buffer_;
  address_ = address(device, &info);
  words_ = static_cast<uint32_t*>(mapped);
}

FaultBuffer::~FaultBuffer() {
  if (buffer_) DeviceProc<PFN_vkDestroyBuffer>(gdpa_, device_, "vkDestroyBuffer")(device_, buffer_, nullptr);
  if (memory_) DeviceProc<PFN_vkFreeMemory>(gdpa_, device_, "vkFreeMemory")(device_, memory_, nullptr);
}

uint32_t FaultBuffer::NewPipeline() {
  pipelines_.emplace_back();
  return static_cast<uint32_t>(pipelines_.size() - 1);
}

void FaultBuffer::Describe(uint32_t pipeline, std::string where, std::vector<std::string> sites) {
  pipelines_.at(pipeline) = {std::move(where), std::move(sites)};
}

std::string FaultBuffer::SiteName(const Pipeline* pipeline, uint32_t site) const {
  if (!pipeline || site == 0 || site > pipeline->sites.size()) return "site " + std::to_string(site);
  return pipeline->sites[site - 1];
}

std::vector<std::string> FaultBuffer::TakeNewFaults() {
  std::vector<std::string> lines;
  if (!Ok()) return lines;
  const uint32_t count = std::atomic_ref<uint32_t>(words_[0]).load(std::memory_order_acquire);
  if (count <= seen_) return lines;
  // One line per pipeline, kind and site, with the first record's detail and a count.
  struct Seen {
    uint32_t detail = 0, times = 0;
  };
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, Seen> groups;
  for (uint32_t r = seen_; r < std::min(count, faults::kRecords); ++r) {
    const uint32_t* record = words_ + faults::kHeaderWords + r * faults::kRecordWords;
    Seen& s = groups[{record[0], record[1], record[2]}];
    if (!s.times++) s.detail = record[3];
  }
  for (const auto& [key, s] : groups) {
    const auto [number, kind, site] = key;
    const Pipeline* pipeline = number < pipelines_.size() ? &pipelines_[number] : nullptr;
    std::string line = "fault pipeline=#" + std::to_string(number) + " " + (pipeline ? pipeline->where : "(unknown pipeline)") + ": " +
                       faults::KindName(kind) + " at " + SiteName(pipeline, site);
    if (kind == faults::kDifferentOperations) line += "; another chunk was at " + SiteName(pipeline, s.detail);
    if (kind == faults::kReplicasDisagree)
      line += "; first: lane " + std::to_string(s.detail >> 16) + "'s element " + std::to_string(s.detail & 0xffff);
    lines.push_back(line + " (" + std::to_string(s.times) + (s.times == 1 ? " time)" : " times)"));
  }
  if (count > faults::kRecords && seen_ < count)
    lines.push_back("fault: " + std::to_string(count - std::max(seen_, faults::kRecords)) + " more faults past the buffer's " +
                    std::to_string(faults::kRecords) + " records");
  seen_ = count;
  return lines;
}

BufferDeviceAddressEnabled::BufferDeviceAddressEnabled(VkDeviceCreateInfo& info) {
  for (auto* s = static_cast<VkBaseOutStructure*>(const_cast<void*>(info.pNext)); s; s = s->pNext) {
    if (s->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES)
      flag_ = &reinterpret_cast<VkPhysicalDeviceVulkan12Features*>(s)->bufferDeviceAddress;
    if (s->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_BUFFER_DEVICE_ADDRESS_FEATURES)
      flag_ = &reinterpret_cast<VkPhysicalDeviceBufferDeviceAddressFeatures*>(s)->bufferDeviceAddress;
    if (flag_) break;
  }
  if (flag_) {
    old_ = *flag_;
    *flag_ = VK_TRUE;
    return;
  }
  own_.bufferDeviceAddress = VK_TRUE;
  own_.pNext = const_cast<void*>(info.pNext);
  info.pNext = &own_;
}

}  // namespace coopmat::virt
