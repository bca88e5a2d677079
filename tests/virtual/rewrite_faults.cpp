// FaultReport (rewrite_internal.h): fault records through a PhysicalStorageBuffer
// pointer made from the address the layer gave (lavapipe's device addresses are host
// addresses of memory the layer has mapped). Records are written with atomics, so no
// alignment operands are needed and invocations of any workgroup may append at once.
#include "rewrite_internal.h"

namespace coopmat::virt {

const char* faults::KindName(uint32_t kind) {
  switch (kind) {
    case kDifferentOperations: return "chunks of a virtual subgroup met at different operations";
    case kMeetingTimedOut: return "a meeting of the chunks of a virtual subgroup timed out";
    case kReplicasDisagree: return "replicas of a matrix element disagree";
    default: return "unknown fault";
  }
}

namespace detail {

using spv::Op;

uint32_t FaultReport::Site(const std::string& what) {
  c_.result.sites.push_back(c_.current + " (" + what + ")");
  return static_cast<uint32_t>(c_.result.sites.size());
}

// Device scope where the memory model allows it without a feature (GLSL450); under the
// Vulkan memory model QueueFamily, which every implementation of it supports.
uint32_t FaultReport::Scope() {
  return static_cast<uint32_t>(c_.C().vulkanMemoryModel ? spv::Scope::QueueFamily : spv::Scope::Device);
}

uint32_t FaultReport::WordPointer(Builder& b, uint32_t word) {
  TypeManager& t = c_.T();
  const uint32_t u64 = t.Int(64, false);
  if (!base_) {
    base_ = c_.m.TakeId();
    const uint64_t address = c_.request.faultAddress;
    t.AddGlobal(ir::Instruction(Op::OpConstant, u64, base_, {static_cast<uint32_t>(address), static_cast<uint32_t>(address >> 32)}));
  }
  const uint32_t offset = b.Emit(Op::OpUConvert, u64, {b.Mul(word, b.U(4))});
  const uint32_t address = b.Emit(Op::OpIAdd, u64, {base_, offset});
  return b.Emit(Op::OpConvertUToPtr, t.Pointer(spv::StorageClass::PhysicalStorageBuffer, t.Uint()), {address});
}

void FaultReport::Report(Builder& b, uint32_t kind, uint32_t site, uint32_t detail) {
  if (!c_.request.faultAddress) return;
  used_ = true;
  TypeManager& t = c_.T();
  const uint32_t scope = b.U(Scope()), relaxed = b.U(0);
  const uint32_t index = b.Emit(Op::OpAtomicIAdd, t.Uint(), {WordPointer(b, b.U(0)), scope, relaxed, b.U(1)});
  // Past the last record every fault overwrites one spare record: the count stays exact.
  const uint32_t record = b.Emit(Op::OpExtInst, t.Uint(), {c_.GlslImport(), 38 /* UMin */, index, b.U(faults::kRecords)});
  const uint32_t first = b.Add(b.U(faults::kHeaderWords), b.Mul(record, b.U(faults::kRecordWords)));
  const uint32_t fields[] = {b.U(c_.request.pipeline), kind, b.U(site), detail};
  for (uint32_t i = 0; i < faults::kRecordWords; ++i)
    b.EmitVoid(Op::OpAtomicStore, {WordPointer(b, b.Add(first, b.U(i))), scope, relaxed, fields[i]});
}

uint32_t FaultReport::TakeTicket(Builder& b) {
  if (!Available()) Fail("a chunk-order ticket without a fault buffer");
  used_ = true;
  return b.Emit(Op::OpAtomicIAdd, c_.T().Uint(), {WordPointer(b, b.U(faults::kTicketWord)), b.U(Scope()), b.U(0), b.U(1)});
}

void FaultReport::Finish() {
  if (!used_) return;
  c_.RequireCapability(spv::Capability::PhysicalStorageBufferAddresses);
  c_.RequireCapability(spv::Capability::Int64);
  if (c_.m.SpirvMinor() < 5) {
    bool declared = false;
    for (const ir::Instruction& inst : c_.m.extensions)
      declared = declared || ir::DecodeString(inst.operands) == "SPV_KHR_physical_storage_buffer";
    if (!declared) c_.m.extensions.emplace_back(Op::OpExtension, 0, 0, ir::EncodeString("SPV_KHR_physical_storage_buffer"));
  }
  if (c_.m.memoryModel.empty()) Fail("the module has no OpMemoryModel");
  c_.m.memoryModel[0].operands[0] = static_cast<uint32_t>(spv::AddressingModel::PhysicalStorageBuffer64);
}

}  // namespace detail
}  // namespace coopmat::virt
