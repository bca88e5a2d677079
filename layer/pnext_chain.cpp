#include "pnext_chain.h"

#include <cstring>

#include <vulkan/vk_layer.h>

namespace coopmat::layer {

size_t StructSize(VkStructureType type) {
  switch (type) {
    // The loader's own link structs sit at the head of every create-info chain.
    case VK_STRUCTURE_TYPE_LOADER_INSTANCE_CREATE_INFO: return sizeof(VkLayerInstanceCreateInfo);
    case VK_STRUCTURE_TYPE_LOADER_DEVICE_CREATE_INFO: return sizeof(VkLayerDeviceCreateInfo);
#include "struct_sizes.inc"
    default: return 0;
  }
}

const VkBaseInStructure* FindInChain(const void* chain, VkStructureType type) {
  for (auto* s = static_cast<const VkBaseInStructure*>(chain); s; s = s->pNext) {
    if (s->sType == type) return s;
  }
  return nullptr;
}

VkBaseInStructure* ChainCopy::Clone(const VkBaseInStructure* source, size_t size) {
  auto storage = std::make_unique<std::byte[]>(size);
  std::memcpy(storage.get(), source, size);
  auto* copy = reinterpret_cast<VkBaseInStructure*>(storage.get());
  storage_.push_back(std::move(storage));
  return copy;
}

bool ChainCopy::Copy(const void* chain, VkStructureType drop, const void** out, const VkBaseInStructure* replace,
                     VkStructureType* unknown) {
  // Find the last node that must change; everything after it is shared as is.
  const VkBaseInStructure* lastEdited = nullptr;
  for (auto* s = static_cast<const VkBaseInStructure*>(chain); s; s = s->pNext) {
    if (s->sType == drop || (replace && s->sType == replace->sType)) lastEdited = s;
  }
  if (!lastEdited) {
    *out = chain;
    return true;
  }
  const VkBaseInStructure** link = reinterpret_cast<const VkBaseInStructure**>(out);
  for (auto* s = static_cast<const VkBaseInStructure*>(chain); s; s = s->pNext) {
    if (s->sType == drop) {
      if (s == lastEdited) break;
      continue;
    }
    const VkBaseInStructure* source = (replace && s->sType == replace->sType) ? replace : s;
    const size_t size = source == replace ? StructSize(replace->sType) : StructSize(s->sType);
    if (size == 0) {
      if (unknown) *unknown = s->sType;
      return false;
    }
    VkBaseInStructure* copy = Clone(source, size);
    *link = copy;
    link = const_cast<const VkBaseInStructure**>(&copy->pNext);
    if (s == lastEdited) {
      *link = s->pNext;
      return true;
    }
  }
  *link = lastEdited->pNext;
  return true;
}

bool ChainCopy::CopyEvery(const void* chain, const void** out, VkStructureType* unknown) {
  const VkBaseInStructure** link = reinterpret_cast<const VkBaseInStructure**>(out);
  for (auto* s = static_cast<const VkBaseInStructure*>(chain); s; s = s->pNext) {
    const size_t size = StructSize(s->sType);
    if (size == 0) {
      if (unknown) *unknown = s->sType;
      return false;
    }
    VkBaseInStructure* copy = Clone(s, size);
    *link = copy;
    link = const_cast<const VkBaseInStructure**>(&copy->pNext);
  }
  *link = nullptr;
  return true;
}

VkBaseOutStructure* ChainCopy::New(VkStructureType type) {
  const size_t size = StructSize(type);
  if (size == 0) return nullptr;
  auto storage = std::make_unique<std::byte[]>(size);
  std::memset(storage.get(), 0, size);
  auto* s = reinterpret_cast<VkBaseOutStructure*>(storage.get());
  s->sType = type;
  storage_.push_back(std::move(storage));
  return s;
}

}  // namespace coopmat::layer
