// Finds or creates types and constants in a module's global section without
// creating duplicates, and answers questions about ids (their type, their
// constant value, the shape of a cooperative matrix type).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir.h"

namespace coopmat {

// Thrown inside the pass library only; LowerModule turns it into an error result.
struct LowerError {
  std::string message;
  bool sharedMemory = false;  // the scratch does not fit the device's shared-memory limit
};
[[noreturn]] void Fail(std::string message);

// Vulkan's cooperative matrix Use values (MatrixAKHR, MatrixBKHR, MatrixAccumulatorKHR).
enum class MatrixUse : uint32_t { A = 0, B = 1, Accumulator = 2 };

struct CoopMatType {
  uint32_t id = 0;
  uint32_t componentType = 0;
  uint32_t scopeId = 0;
  uint32_t rowsId = 0;
  uint32_t colsId = 0;
  uint32_t useId = 0;
  MatrixUse use = MatrixUse::A;   // valid when the Use is a plain constant
  uint32_t componentBytes = 0;    // 1, 2 or 4 (8 for 64-bit types, which no lowering handles)
  bool componentFloat = false;
  bool componentSigned = false;
  // An OpTypeFloat with an FPEncoding operand (bfloat16, fp8 E4M3/E5M2): its values
  // can be moved and converted (OpFConvert and friends), never computed with.
  bool componentEncoded = false;
};

class TypeManager {
 public:
  explicit TypeManager(ir::Module& module);

  // The global instruction (type, constant, global variable) defining id, or null.
  const ir::Instruction* GlobalDef(uint32_t id) const;
  // The result type of any id in the module (0 when unknown or untyped).
  uint32_t TypeOf(uint32_t id) const;
  void SetTypeOf(uint32_t id, uint32_t type);

  uint32_t Void();
  uint32_t Bool();
  uint32_t Int(uint32_t width, bool isSigned);
  uint32_t Uint() { return Int(32, false); }
  uint32_t Float(uint32_t width);
  uint32_t Vector(uint32_t component, uint32_t count);
  uint32_t Pointer(spv::StorageClass storage, uint32_t pointee);
  uint32_t FunctionType(uint32_t returnType, const std::vector<uint32_t>& params);
  uint32_t CoopMat(uint32_t component, uint32_t scopeId, uint32_t rowsId, uint32_t colsId, uint32_t useId);
  // An array type that carries no decoration (Workgroup arrays must not have ArrayStride).
  uint32_t UndecoratedArray(uint32_t element, uint32_t lengthId);

  uint32_t UintConstant(uint32_t value);
  uint32_t Constant(uint32_t type, uint32_t value);
  // OpSpecConstantOp; folded to a plain constant when every operand is a plain constant.
  uint32_t SpecOp(uint32_t type, spv::Op op, const std::vector<uint32_t>& operands);

  // Value of a plain (non-specialization) 32-bit-or-narrower integer constant.
  std::optional<uint32_t> ConstantValue(uint32_t id) const;
  bool IsSpecConstant(uint32_t id) const;
  // The value of an OpSpecConstant of 32 bits or fewer, or of an OpSpecConstantOp
  // of them, without a VkSpecializationInfo (every constant at its default).
  std::optional<uint32_t> SpecConstantDefault(uint32_t id) const;

  // The shape of an OpTypeCooperativeMatrixKHR, or nullopt when id is not one.
  std::optional<CoopMatType> CoopMatInfo(uint32_t typeId) const;
  bool IsCoopMat(uint32_t typeId) const;

  // OpTypeInt/OpTypeFloat properties (width 0 when not scalar numeric).
  uint32_t ScalarWidth(uint32_t typeId) const;
  bool IsIntType(uint32_t typeId) const;
  bool IsSignedInt(uint32_t typeId) const;
  bool IsFloatType(uint32_t typeId) const;
  // An OpTypeFloat with an FPEncoding operand (bfloat16, fp8).
  bool IsEncodedFloat(uint32_t typeId) const;
  // The VkComponentTypeKHR of a scalar type (bfloat16, fp8 included), or nullopt.
  std::optional<uint32_t> VkComponentType(uint32_t typeId) const;
  // Integers 0..N that a float type holds exactly (2^(mantissa bits + 1)); 0 when not a float.
  uint32_t ExactIntegerLimit(uint32_t typeId) const;

  // Ids that carry any decoration (so they must not be reused as a generic type).
  bool IsDecorated(uint32_t id) const;

  // Appends a raw global instruction (for ids reserved earlier).
  void AddGlobal(ir::Instruction inst);

 private:
  uint32_t FindOrAdd(spv::Op op, uint32_t type, std::vector<uint32_t> operands, bool requireUndecorated = false);
  void Index(const ir::Instruction& inst, size_t position);

  ir::Module& module_;
  std::unordered_map<uint32_t, size_t> globalIndex_;
  std::map<std::vector<uint32_t>, uint32_t> dedup_;
  std::vector<uint32_t> typeOf_;
  std::vector<bool> decorated_;
  // SpecConstantDefault's values of OpSpecConstantOps, made on first use.
  mutable std::optional<std::unordered_map<uint32_t, uint32_t>> frozenDefaults_;
};

}  // namespace coopmat
