// The parts of the virtual device's rewrite (rewrite.h), one per concern:
//  * Core (rewrite.cpp): the module, its types, the virtual subgroup's lane and its
//    region of the one Workgroup scratch array, values as 32-bit words; rewrite.cpp
//    also walks the functions and hands each instruction to one of the two parts.
//  * MatrixRewrite (rewrite_matrix.cpp): cooperative matrices become per-invocation
//    arrays laid out by the profile; Load, Store, MulAdd, Length, element-wise ops.
//  * SubgroupEmulation (rewrite_subgroup.cpp): subgroup built-ins, group operations
//    and Subgroup-scope barriers over virtual subgroups of the profile's size.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "ieee_float.h"
#include "lowering.h"
#include "rewrite.h"

namespace coopmat::virt::detail {

inline constexpr uint32_t kScopeWorkgroup = static_cast<uint32_t>(spv::Scope::Workgroup);
inline constexpr uint32_t kScopeSubgroup = static_cast<uint32_t>(spv::Scope::Subgroup);

class Core {
 public:
  Core(ir::Module& module, const Profile& target, const RewriteRequest& asked, RewriteResult& out)
      : m(module), profile(target), request(asked), result(out), S(asked.subgroupSize) {}

  ir::Module& m;
  const Profile& profile;
  const RewriteRequest& request;
  RewriteResult& result;
  const uint32_t S;          // the virtual subgroup size
  uint32_t invocations = 0;  // the largest workgroup of an entry point
  // Definitions in the function being rewritten, by result id.
  std::map<uint32_t, ir::Instruction> defs;

  // The workgroup sizes: whole virtual subgroups (sets `invocations`).
  void CheckEntryPoints();
  // After the module-level passes that the type manager would not see.
  void StartTypes();
  TypeManager& T() { return *types_; }
  Context& C() { return *context_; }

  uint32_t LocalIndex(Builder& b);
  uint32_t Lane(Builder& b);
  uint32_t SubgroupId(Builder& b);

  // Scratch: one Workgroup uint array, a region of wordsPerSubgroup per virtual subgroup.
  void Require(uint32_t words) { scratchWords_ = std::max(scratchWords_, words); }
  void Barrier(Builder& b);
  uint32_t RegionBase(Builder& b);
  uint32_t WordPointer(Builder& b, uint32_t base, uint32_t offset);
  void StoreWord(Builder& b, uint32_t base, uint32_t offset, uint32_t word);
  uint32_t LoadWord(Builder& b, uint32_t base, uint32_t offset);
  void FinishScratch();

  // Values as 32-bit words (how they cross the Workgroup memory).
  uint32_t WordCount(uint32_t type);
  std::vector<uint32_t> ToWords(Builder& b, uint32_t value, uint32_t type);
  uint32_t FromWords(Builder& b, const std::vector<uint32_t>& words, size_t& next, uint32_t type);
  uint32_t FromWord(Builder& b, uint32_t word, uint32_t type);

  uint32_t GlslImport();
  // A float type lavapipe computes with (not bfloat16 or fp8).
  bool IsArithmeticFloat(uint32_t type);
  // Whether two types are declared alike once bfloat16 and fp8 are unsigned integers
  // (a bitcast between them becomes OpCopyObject).
  bool SameStorage(uint32_t a, uint32_t b);
  // `value` as `type` of the same width: a bitcast, or a copy where SameStorage.
  uint32_t Reinterpret(Builder& b, uint32_t value, uint32_t type);

 private:
  std::vector<uint32_t> Storage(uint32_t type);

  std::optional<TypeManager> types_;
  LowerOptions options_;
  LowerStats stats_;
  std::optional<Context> context_;
  uint32_t scratchVar_ = 0, wordsPerSubgroup_ = 0, scratchWords_ = 0;
};

// A cooperative matrix type after the rewrite: an array of `length` elements.
struct Matrix {
  CoopMatType info;
  const LinearLayout* layout = nullptr;
  uint32_t rows = 0, cols = 0;
  uint32_t length = 0;
};

// bfloat16 and fp8 (rewrite_encoded.cpp). Lavapipe has neither type: until Finish the
// rewrite uses their values as the unsigned integers of their widths, and Finish then
// declares them so. Conversions are integer code through binary32, rounding to
// nearest even; MulAdd reads A and B through Decode.
class EncodedFloats {
 public:
  explicit EncodedFloats(Core& core) : c_(core) {}
  // The format of a bfloat16 or fp8 scalar type, or null for any other type.
  const IeeeFormat* Format(uint32_t scalarType) const;
  // Whether a scalar or vector type has bfloat16 or fp8 components.
  bool Involves(uint32_t type) const;
  // The binary32 value of `format` bits (the low bits of a uint word), exactly.
  uint32_t Decode(Builder& b, uint32_t word, const IeeeFormat& format);
  // A binary32 value as `format` bits in a uint, rounded to nearest even; overflow
  // and infinities as SPV_EXT_float8 says, with or without saturation.
  uint32_t Encode(Builder& b, uint32_t f32, const IeeeFormat& format, bool saturate);
  // A scalar conversion (OpFConvert, OpConvert{S,U}ToF, OpConvertFTo{S,U}) from or into bfloat16 or fp8.
  uint32_t ConvertScalar(Builder& b, spv::Op op, uint32_t value, uint32_t to, bool saturate);
  // Takes the conversion's decorations off (integer code carries none): whether it saturates.
  bool ConversionSaturates(const ir::Instruction& inst);
  bool Handles(const ir::Instruction& inst) const;
  void Rewrite(Builder& b, const ir::Instruction& inst);
  void Finish();

 private:
  uint32_t Scalar(uint32_t type) const;
  uint32_t Convert(Builder& b, spv::Op op, uint32_t value, uint32_t to, bool saturate);
  uint32_t Select(Builder& b, uint32_t condition, uint32_t yes, uint32_t no);
  uint32_t RoundShift(Builder& b, uint32_t bits, uint32_t shift);

  Core& c_;
};

class MatrixRewrite {
 public:
  MatrixRewrite(Core& core, EncodedFloats& encoded) : c_(core), encoded_(encoded) {}
  // Every OpTypeCooperativeMatrixKHR becomes an array (before the type manager).
  void ReplaceTypes();
  // A matrix constant names one value for every element.
  void ExpandConstants();
  bool Handles(const ir::Instruction& inst);
  void Rewrite(Builder& b, const ir::Instruction& inst);
  void DropDeclarations();

 private:
  TypeManager& T() { return c_.T(); }
  const Matrix* MatrixType(uint32_t typeId) const;
  const Matrix* MatrixValue(uint32_t id) { return MatrixType(T().TypeOf(id)); }
  const Matrix& MatrixOperand(const ir::Instruction& inst, uint32_t id, const char* what);
  std::vector<std::pair<uint32_t, uint32_t>> Coordinates(Builder& b, const Matrix& matrix);
  uint32_t ComponentBits(Builder& b, uint32_t value);
  uint32_t ComponentFromBits(Builder& b, uint32_t word, uint32_t component);
  void LoadOrStore(Builder& b, const ir::Instruction& inst, bool store);
  void Scatter(Builder& b, uint32_t base, uint32_t offset, uint32_t value, const Matrix& matrix, bool transpose = false,
               const std::function<uint32_t(uint32_t)>& convert = nullptr);
  uint32_t ToResultType(Builder& b, uint32_t value, uint32_t to, bool isSigned);
  void NoContraction(uint32_t id);
  void MulAdd(Builder& b, const ir::Instruction& inst);
  void ElementWise(Builder& b, const ir::Instruction& inst);
  // An OpCompositeExtract/Insert of a matrix element past the length (RewriteResult::pastLengthAccesses).
  bool PastLength(const ir::Instruction& inst);

  Core& c_;
  EncodedFloats& encoded_;
  std::map<uint32_t, Matrix> matrices_;
  ir::Function dummyFunction_;  // RegisterCoordinate reads only FunctionState::lane
};

// GroupNonUniform arithmetic: the plain instruction (or GLSL.std.450 number) that combines two values.
struct Combiner {
  spv::Op op = spv::Op::OpNop;
  uint32_t glsl = 0;  // GLSL.std.450 instruction when op is OpExtInst
};

class SubgroupEmulation {
 public:
  explicit SubgroupEmulation(Core& core) : c_(core) {}
  // The module's own subgroup built-in variables go (before the type manager).
  void TakeBuiltins();
  bool Handles(const ir::Instruction& inst) const;
  void Rewrite(Builder& b, const ir::Instruction& inst);

 private:
  TypeManager& T() { return c_.T(); }
  uint32_t BuiltinValue(Builder& b, spv::BuiltIn which, uint32_t type);
  void WidenBarrier(Builder& b, const ir::Instruction& inst);
  void CheckSubgroupScope(const ir::Instruction& inst);
  // Every invocation's value published in the region (word plane w of lane L at w * S + L).
  struct Exchange {
    uint32_t base = 0;
    uint32_t type = 0;
    uint32_t words = 0;
  };
  Exchange Publish(Builder& b, uint32_t value);
  uint32_t Read(Builder& b, const Exchange& x, uint32_t lane);
  uint32_t Wrap(Builder& b, uint32_t lane);
  uint32_t Combine(Builder& b, const Combiner& combiner, uint32_t type, uint32_t x, uint32_t y);
  uint32_t Identity(spv::Op group, uint32_t type);
  void GroupArithmetic(Builder& b, const ir::Instruction& inst);
  void GroupOperation(Builder& b, const ir::Instruction& inst);

  Core& c_;
  std::map<uint32_t, spv::BuiltIn> builtinVars_;
};

}  // namespace coopmat::virt::detail
