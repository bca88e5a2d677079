// Copies of application pNext chains that the layer must edit before passing
// them down. The application's structures are never written.
#pragma once

#include <vulkan/vulkan.h>

#include <cstddef>
#include <memory>
#include <vector>

namespace coopmat::layer {

// sizeof the struct with this sType, 0 when unknown to the headers the layer was built with.
size_t StructSize(VkStructureType type);

// Owns shallow copies of chain nodes. Copy() returns a chain equal to `chain`
// without any node of type `drop` (and with `replace` substituted for a node of
// its own type, when given). Nodes after the last edited one are shared, not copied.
class ChainCopy {
 public:
  // Returns false when a node that had to be copied has an unknown sType (its size
  // is unknown), and stores that sType in *unknown when given; *out is then unusable.
  bool Copy(const void* chain, VkStructureType drop, const void** out, const VkBaseInStructure* replace = nullptr,
            VkStructureType* unknown = nullptr);

  // Copies every node of `chain` (so the caller may edit any of them); false, with
  // the sType in *unknown, when a node's size is unknown.
  bool CopyEvery(const void* chain, const void** out, VkStructureType* unknown = nullptr);

  // A zeroed struct of a known sType (0 size: null), owned like the copies.
  VkBaseOutStructure* New(VkStructureType type);

  // A copy of one struct whose pNext the caller may then change.
  template <typename T> T* Own(const T& value) {
    auto storage = std::make_unique<std::byte[]>(sizeof(T));
    T* copy = new (storage.get()) T(value);
    storage_.push_back(std::move(storage));
    return copy;
  }

 private:
  VkBaseInStructure* Clone(const VkBaseInStructure* source, size_t size);  // an owned copy of `size` bytes
  std::vector<std::unique_ptr<std::byte[]>> storage_;
};

const VkBaseInStructure* FindInChain(const void* chain, VkStructureType type);

}  // namespace coopmat::layer
