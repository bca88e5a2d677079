#include "rewrite.h"

#include <algorithm>
#include <map>
#include <set>

#include "lowering.h"
#include "register.h"

namespace coopmat::virt {
namespace {

using spv::Op;

constexpr uint32_t kScopeWorkgroup = static_cast<uint32_t>(spv::Scope::Workgroup);
constexpr uint32_t kScopeSubgroup = static_cast<uint32_t>(spv::Scope::Subgroup);

// A cooperative matrix type after the rewrite: an array of `length` elements.
struct Matrix {
  CoopMatType info;
  const LinearLayout* layout = nullptr;
  uint32_t rows = 0, cols = 0;
  uint32_t length = 0;
};

bool SameMap(const LinearLayout& a, const LinearLayout& b) {
  return a.length == b.length && a.laneBits == b.laneBits && a.indexBits == b.indexBits;
}

// Element-wise operations KHR allows on matrices (each element on its own).
bool IsElementWise(Op op) {
  switch (op) {
    case Op::OpFNegate: case Op::OpSNegate: case Op::OpFAdd: case Op::OpIAdd: case Op::OpFSub: case Op::OpISub:
    case Op::OpFMul: case Op::OpIMul: case Op::OpFDiv: case Op::OpSDiv: case Op::OpUDiv: case Op::OpMatrixTimesScalar:
    case Op::OpFConvert: case Op::OpSConvert: case Op::OpUConvert: case Op::OpConvertFToS: case Op::OpConvertFToU:
    case Op::OpConvertSToF: case Op::OpConvertUToF: case Op::OpBitcast:
      return true;
    default: return false;
  }
}

bool IsConversion(Op op) {
  switch (op) {
    case Op::OpFConvert: case Op::OpSConvert: case Op::OpUConvert: case Op::OpConvertFToS: case Op::OpConvertFToU:
    case Op::OpConvertSToF: case Op::OpConvertUToF: case Op::OpBitcast:
      return true;
    default: return false;
  }
}

// Operations on matrix values that work on the arrays unchanged.
bool KeepsMatrices(Op op) {
  switch (op) {
    case Op::OpLoad: case Op::OpStore: case Op::OpVariable: case Op::OpPhi: case Op::OpSelect: case Op::OpCopyObject:
    case Op::OpFunctionCall: case Op::OpReturnValue: case Op::OpFunctionParameter: case Op::OpCompositeExtract:
    case Op::OpCompositeInsert: case Op::OpAccessChain: case Op::OpInBoundsAccessChain: case Op::OpUndef:
    case Op::OpCopyMemory: case Op::OpLine: case Op::OpNoLine:
      return true;
    default: return false;
  }
}

// GroupNonUniform arithmetic: the plain instruction (or GLSL.std.450 number) that combines two values.
struct Combiner {
  Op op = Op::OpNop;
  uint32_t glsl = 0;  // GLSL.std.450 instruction when op is OpExtInst
};
std::optional<Combiner> CombinerOf(Op op) {
  switch (op) {
    case Op::OpGroupNonUniformIAdd: return Combiner{Op::OpIAdd};
    case Op::OpGroupNonUniformFAdd: return Combiner{Op::OpFAdd};
    case Op::OpGroupNonUniformIMul: return Combiner{Op::OpIMul};
    case Op::OpGroupNonUniformFMul: return Combiner{Op::OpFMul};
    case Op::OpGroupNonUniformFMin: return Combiner{Op::OpExtInst, 37};
    case Op::OpGroupNonUniformUMin: return Combiner{Op::OpExtInst, 38};
    case Op::OpGroupNonUniformSMin: return Combiner{Op::OpExtInst, 39};
    case Op::OpGroupNonUniformFMax: return Combiner{Op::OpExtInst, 40};
    case Op::OpGroupNonUniformUMax: return Combiner{Op::OpExtInst, 41};
    case Op::OpGroupNonUniformSMax: return Combiner{Op::OpExtInst, 42};
    case Op::OpGroupNonUniformBitwiseAnd: return Combiner{Op::OpBitwiseAnd};
    case Op::OpGroupNonUniformBitwiseOr: return Combiner{Op::OpBitwiseOr};
    case Op::OpGroupNonUniformBitwiseXor: return Combiner{Op::OpBitwiseXor};
    case Op::OpGroupNonUniformLogicalAnd: return Combiner{Op::OpLogicalAnd};
    case Op::OpGroupNonUniformLogicalOr: return Combiner{Op::OpLogicalOr};
    case Op::OpGroupNonUniformLogicalXor: return Combiner{Op::OpLogicalNotEqual};
    default: return std::nullopt;
  }
}

class Rewriter {
 public:
  Rewriter(ir::Module& module, const Profile& profile, const RewriteRequest& request, RewriteResult& result)
      : m_(module), profile_(profile), request_(request), result_(result), S_(request.subgroupSize) {}

  void Run() {
    CheckEntryPoints();
    ReplaceMatrixTypes();
    TakeSubgroupBuiltins();  // before the type manager: it indexes the globals by position
    types_.emplace(m_);
    context_.emplace(m_, *types_, options_, stats_);
    Context& c = *context_;
    c.vulkanMemoryModel = !m_.memoryModel.empty() && m_.memoryModel[0].Operand(1) == static_cast<uint32_t>(spv::MemoryModel::Vulkan);
    scratchVar_ = m_.TakeId();
    wordsPerSubgroup_ = m_.TakeId();
    ExpandMatrixConstants();
    for (ir::Function& f : m_.functions) RewriteFunction(f);
    FinishScratch();
    DropCooperativeMatrixDeclarations();
    c.scratch.Finalize();  // lists the built-ins this rewrite reads in the interfaces
  }

 private:
  TypeManager& T() { return *types_; }
  Context& C() { return *context_; }

  // ---- Module checks and types ---------------------------------------------

  void CheckEntryPoints() {
    if (m_.entryPoints.empty()) Fail("the module has no entry point");
    for (const ir::Instruction& entry : m_.entryPoints)
      if (entry.Operand(0) != static_cast<uint32_t>(spv::ExecutionModel::GLCompute))
        Fail("the virtual device rewrites compute modules only; entry point %" + std::to_string(entry.Operand(1)) +
             " has execution model " + spv::ExecutionModelToString(static_cast<spv::ExecutionModel>(entry.Operand(0))));
    TypeManager t(m_);
    // Workgroup size: a WorkgroupSize constant, else each entry point's LocalSize(Id).
    uint32_t fromConstant = 0;
    for (const ir::AppliedDecoration& d : ir::FindDecorations(m_, spv::Decoration::BuiltIn))
      if (!d.literals.empty() && d.literals[0] == static_cast<uint32_t>(spv::BuiltIn::WorkgroupSize))
        if (const ir::Instruction* def = t.GlobalDef(d.target); def && def->operands.size() == 3) {
          uint32_t product = 1;
          for (uint32_t id : def->operands) {
            auto v = t.ConstantValue(id);
            if (!v) Fail("the WorkgroupSize constant is not constant after specialization");
            product *= *v;
          }
          fromConstant = product;
        }
    for (const ir::Instruction& entry : m_.entryPoints) {
      uint32_t size = fromConstant;
      for (const ir::Instruction& mode : m_.executionModes) {
        if (size || mode.Operand(0) != entry.Operand(1)) continue;
        if (mode.Operand(1) == static_cast<uint32_t>(spv::ExecutionMode::LocalSize))
          size = mode.Operand(2) * mode.Operand(3) * mode.Operand(4);
        if (mode.Operand(1) == static_cast<uint32_t>(spv::ExecutionMode::LocalSizeId)) {
          size = 1;
          for (size_t i = 2; i < 5; ++i) {
            auto v = t.ConstantValue(mode.Operand(i));
            if (!v) Fail("LocalSizeId is not constant after specialization");
            size *= *v;
          }
        }
      }
      if (!size) Fail("entry point %" + std::to_string(entry.Operand(1)) + " has no workgroup size");
      if (size % S_)
        Fail("a workgroup of " + std::to_string(size) + " invocations is not a whole number of subgroups of " +
             std::to_string(S_) + " (the virtual device runs full subgroups only)");
      invocations_ = std::max(invocations_, size);
    }
  }

  // Every OpTypeCooperativeMatrixKHR becomes, under the same id, an array of its
  // component type with the profile's length; the length constants are put before
  // the first matrix type so that every array can stay where its matrix was.
  void ReplaceMatrixTypes() {
    TypeManager t(m_);
    size_t first = m_.globals.size();
    for (size_t i = 0; i < m_.globals.size(); ++i) {
      const ir::Instruction& inst = m_.globals[i];
      if (inst.opcode != Op::OpTypeCooperativeMatrixKHR) continue;
      first = std::min(first, i);
      auto info = t.CoopMatInfo(inst.resultId);
      auto scope = t.ConstantValue(info->scopeId);
      auto rows = t.ConstantValue(info->rowsId), cols = t.ConstantValue(info->colsId), use = t.ConstantValue(info->useId);
      if (!scope || *scope != kScopeSubgroup) Fail("matrix type %" + std::to_string(inst.resultId) + " is not of Subgroup scope");
      if (!rows || !cols || !use || *use > 2)
        Fail("matrix type %" + std::to_string(inst.resultId) + " has a shape or Use that is not constant");
      auto vkType = t.VkComponentType(info->componentType);
      if (!vkType) Fail("matrix type %" + std::to_string(inst.resultId) + " has a component type without a VkComponentTypeKHR");
      if (t.IsEncodedFloat(info->componentType))
        Fail("matrix type %" + std::to_string(inst.resultId) + ": bfloat16 and fp8 matrices are not emulated yet");
      info->use = static_cast<MatrixUse>(*use);
      const LayoutKey key{*vkType, *use, *rows, *cols, S_};
      const LinearLayout* layout = profile_.FindLayout(key);
      if (!layout) Fail("profile " + profile_.name + " has no layout for " + ToString(key));
      matrices_[inst.resultId] = Matrix{*info, layout, *rows, *cols, layout->length};
    }
    if (matrices_.empty()) return;
    // A 32-bit unsigned int type before the first matrix type (moved there, or made).
    uint32_t uintType = 0;
    for (size_t i = 0; i < m_.globals.size(); ++i) {
      const ir::Instruction& inst = m_.globals[i];
      if (inst.opcode == Op::OpTypeInt && inst.Operand(0) == 32 && inst.Operand(1) == 0) {
        uintType = inst.resultId;
        if (i > first) {
          ir::Instruction moved = inst;
          m_.globals.erase(m_.globals.begin() + static_cast<ptrdiff_t>(i));
          m_.globals.insert(m_.globals.begin() + static_cast<ptrdiff_t>(first), moved);
          ++first;
        }
        break;
      }
    }
    if (!uintType) {
      uintType = m_.TakeId();
      m_.globals.insert(m_.globals.begin() + static_cast<ptrdiff_t>(first), ir::Instruction(Op::OpTypeInt, 0, uintType, {32, 0}));
      ++first;
    }
    std::map<uint32_t, uint32_t> lengthConstants;
    for (const auto& [id, matrix] : matrices_) {
      if (lengthConstants.count(matrix.length)) continue;
      const uint32_t constant = m_.TakeId();
      lengthConstants[matrix.length] = constant;
      m_.globals.insert(m_.globals.begin() + static_cast<ptrdiff_t>(first++),
                        ir::Instruction(Op::OpConstant, uintType, constant, {matrix.length}));
    }
    for (ir::Instruction& inst : m_.globals)
      if (inst.opcode == Op::OpTypeCooperativeMatrixKHR) {
        const Matrix& matrix = matrices_.at(inst.resultId);
        inst = ir::Instruction(Op::OpTypeArray, 0, inst.resultId, {matrix.info.componentType, lengthConstants.at(matrix.length)});
      }
  }

  const Matrix* MatrixType(uint32_t typeId) const {
    auto it = matrices_.find(typeId);
    return it == matrices_.end() ? nullptr : &it->second;
  }
  const Matrix* MatrixValue(uint32_t id) { return MatrixType(T().TypeOf(id)); }
  const Matrix& MatrixOperand(const ir::Instruction& inst, uint32_t id, const char* what) {
    const Matrix* matrix = MatrixValue(id);
    if (!matrix) Fail(Describe(inst) + ": " + what + " is not a cooperative matrix");
    return *matrix;
  }

  // A matrix constant names one value for every element.
  void ExpandMatrixConstants() {
    for (ir::Instruction& inst : m_.globals)
      if ((inst.opcode == Op::OpConstantComposite || inst.opcode == Op::OpSpecConstantComposite) && MatrixType(inst.typeId)) {
        if (inst.operands.size() != 1) Fail("matrix constant %" + std::to_string(inst.resultId) + " does not have one constituent");
        inst.opcode = Op::OpConstantComposite;
        inst.operands.assign(MatrixType(inst.typeId)->length, inst.operands[0]);
      }
  }

  // ---- Subgroup built-ins -----------------------------------------------------

  // The module's own subgroup built-in variables go: every OpLoad of one is replaced
  // by the virtual value.
  void TakeSubgroupBuiltins() {
    std::set<uint32_t> taken;
    for (auto it = m_.annotations.begin(); it != m_.annotations.end();) {
      const bool builtin = it->opcode == Op::OpDecorate && it->operands.size() >= 3 &&
                           it->operands[1] == static_cast<uint32_t>(spv::Decoration::BuiltIn);
      const auto which = builtin ? static_cast<spv::BuiltIn>(it->operands[2]) : spv::BuiltIn::Max;
      switch (which) {
        case spv::BuiltIn::SubgroupSize: case spv::BuiltIn::SubgroupLocalInvocationId: case spv::BuiltIn::SubgroupId:
        case spv::BuiltIn::NumSubgroups: case spv::BuiltIn::SubgroupEqMask:
          builtinVars_[it->operands[0]] = which;
          taken.insert(it->operands[0]);
          it = m_.annotations.erase(it);
          continue;
        case spv::BuiltIn::SubgroupGeMask: case spv::BuiltIn::SubgroupGtMask: case spv::BuiltIn::SubgroupLeMask:
        case spv::BuiltIn::SubgroupLtMask:
          Fail(std::string("the built-in ") + spv::BuiltInToString(which) + " is not emulated");
        default: ++it;
      }
    }
    if (taken.empty()) return;
    std::erase_if(m_.annotations, [&](const ir::Instruction& inst) { return inst.opcode == Op::OpDecorate && taken.count(inst.Operand(0)); });
    std::erase_if(m_.globals, [&](const ir::Instruction& inst) { return inst.opcode == Op::OpVariable && taken.count(inst.resultId); });
    for (ir::Instruction& entry : m_.entryPoints) {
      // Operands: model, function, name words..., interface ids; the name ends with a 0 byte.
      size_t i = 2;
      while (i < entry.operands.size() && (entry.operands[i] >> 24) != 0) ++i;
      ++i;
      for (size_t k = entry.operands.size(); k > i; --k)
        if (taken.count(entry.operands[k - 1])) entry.operands.erase(entry.operands.begin() + static_cast<ptrdiff_t>(k - 1));
    }
    std::erase_if(m_.debug, [&](const ir::Instruction& inst) {
      return (inst.opcode == Op::OpName || inst.opcode == Op::OpMemberName) && taken.count(inst.Operand(0));
    });
  }

  uint32_t LocalIndex(Builder& b) { return LoadBuiltin(b, spv::BuiltIn::LocalInvocationIndex); }
  uint32_t Lane(Builder& b) { return b.Mod(LocalIndex(b), b.U(S_)); }
  uint32_t SubgroupId(Builder& b) { return b.Div(LocalIndex(b), b.U(S_)); }

  uint32_t BuiltinValue(Builder& b, spv::BuiltIn which, uint32_t type) {
    uint32_t value = 0;
    switch (which) {
      case spv::BuiltIn::SubgroupSize: value = b.U(S_); break;
      case spv::BuiltIn::SubgroupLocalInvocationId: value = Lane(b); break;
      case spv::BuiltIn::SubgroupId: value = SubgroupId(b); break;
      case spv::BuiltIn::NumSubgroups: value = b.U(invocations_ / S_); break;
      case spv::BuiltIn::SubgroupEqMask: {
        const uint32_t lane = Lane(b);
        const uint32_t bit = b.ShiftLeft(b.U(1), b.And(lane, b.U(31)));
        const uint32_t word = b.ShiftRight(lane, b.U(5));
        std::vector<uint32_t> words;
        for (uint32_t w = 0; w < 4; ++w) {
          const uint32_t here = b.Emit(Op::OpIEqual, T().Bool(), {word, b.U(w)});
          words.push_back(b.Emit(Op::OpSelect, T().Uint(), {here, bit, b.U(0)}));
        }
        const uint32_t uvec4 = T().Vector(T().Uint(), 4);
        value = b.Emit(Op::OpCompositeConstruct, uvec4, words);
        return type == uvec4 ? value : b.Emit(Op::OpBitcast, type, {value});
      }
      default: Fail("internal error: unexpected built-in");
    }
    return b.AsIntType(value, type);
  }

  // ---- Scratch: one Workgroup uint array, a region of wordsPerSubgroup per virtual subgroup

  void Require(uint32_t words) { scratchWords_ = std::max(scratchWords_, words); }
  void Barrier(Builder& b) {
    const uint32_t workgroup = b.U(kScopeWorkgroup);
    b.EmitVoid(Op::OpControlBarrier, {workgroup, workgroup, C().BarrierSemantics()});
  }
  uint32_t RegionBase(Builder& b) { return b.Mul(SubgroupId(b), wordsPerSubgroup_); }
  uint32_t WordPointer(Builder& b, uint32_t base, uint32_t offset) {
    return b.Emit(Op::OpAccessChain, T().Pointer(spv::StorageClass::Workgroup, T().Uint()), {scratchVar_, b.Add(base, offset)});
  }
  void StoreWord(Builder& b, uint32_t base, uint32_t offset, uint32_t word) {
    b.EmitVoid(Op::OpStore, {WordPointer(b, base, offset), word});
  }
  uint32_t LoadWord(Builder& b, uint32_t base, uint32_t offset) {
    return b.Emit(Op::OpLoad, T().Uint(), {WordPointer(b, base, offset)});
  }

  void FinishScratch() {
    TypeManager& t = T();
    t.AddGlobal(ir::Instruction(Op::OpConstant, t.Uint(), wordsPerSubgroup_, {std::max<uint32_t>(scratchWords_, 1)}));
    if (!scratchWords_) return;
    const uint64_t words = uint64_t(scratchWords_) * (invocations_ / S_);
    result_.scratchBytes = static_cast<uint32_t>(words * 4);
    if (request_.sharedMemoryLimit && words * 4 > request_.sharedMemoryLimit)
      Fail("the emulation needs " + std::to_string(words * 4) + " bytes of Workgroup memory, more than the real device's " +
           std::to_string(request_.sharedMemoryLimit));
    const uint32_t array = t.UndecoratedArray(t.Uint(), t.UintConstant(static_cast<uint32_t>(words)));
    t.AddGlobal(ir::Instruction(Op::OpVariable, t.Pointer(spv::StorageClass::Workgroup, array), scratchVar_,
                                {static_cast<uint32_t>(spv::StorageClass::Workgroup)}));
    if (m_.SpirvMinor() >= 4)
      for (ir::Instruction& entry : m_.entryPoints) entry.operands.push_back(scratchVar_);
  }

  // ---- Values as 32-bit words (how they cross the Workgroup memory) ----------

  uint32_t WordCount(uint32_t type) {
    const ir::Instruction* def = T().GlobalDef(type);
    if (def && def->opcode == Op::OpTypeVector) return def->Operand(1) * WordCount(def->Operand(0));
    if (def && def->opcode == Op::OpTypeBool) return 1;
    const uint32_t width = T().ScalarWidth(type);
    if (width == 8 || width == 16 || width == 32) return 1;
    if (width == 64) return 2;
    Fail("values of type %" + std::to_string(type) + " cannot cross the virtual subgroup");
  }

  std::vector<uint32_t> ToWords(Builder& b, uint32_t value, uint32_t type) {
    TypeManager& t = T();
    const ir::Instruction* def = t.GlobalDef(type);
    if (def && def->opcode == Op::OpTypeVector) {
      std::vector<uint32_t> words;
      for (uint32_t i = 0; i < def->Operand(1); ++i) {
        auto part = ToWords(b, b.Emit(Op::OpCompositeExtract, def->Operand(0), {value, i}), def->Operand(0));
        words.insert(words.end(), part.begin(), part.end());
      }
      return words;
    }
    if (def && def->opcode == Op::OpTypeBool) return {b.Emit(Op::OpSelect, t.Uint(), {value, b.U(1), b.U(0)})};
    const uint32_t width = t.ScalarWidth(type);
    if (width == 32) return {b.AsIntType(value, t.Uint())};
    if (width == 64) {
      const uint32_t pair = b.Emit(Op::OpBitcast, t.Vector(t.Uint(), 2), {value});
      return {b.Emit(Op::OpCompositeExtract, t.Uint(), {pair, 0}), b.Emit(Op::OpCompositeExtract, t.Uint(), {pair, 1})};
    }
    if (t.IsFloatType(type)) return {b.Emit(Op::OpBitcast, t.Uint(), {b.Emit(Op::OpFConvert, t.Float(32), {value})})};
    return {b.Emit(Op::OpUConvert, t.Uint(), {value})};  // 8 and 16-bit integers, zero-extended bits
  }

  uint32_t FromWords(Builder& b, const std::vector<uint32_t>& words, size_t& next, uint32_t type) {
    TypeManager& t = T();
    const ir::Instruction* def = t.GlobalDef(type);
    if (def && def->opcode == Op::OpTypeVector) {
      std::vector<uint32_t> parts;
      for (uint32_t i = 0; i < def->Operand(1); ++i) parts.push_back(FromWords(b, words, next, def->Operand(0)));
      return b.Emit(Op::OpCompositeConstruct, type, parts);
    }
    const uint32_t word = words.at(next++);
    if (def && def->opcode == Op::OpTypeBool) return b.Emit(Op::OpINotEqual, type, {word, b.U(0)});
    const uint32_t width = t.ScalarWidth(type);
    if (width == 32) return type == t.Uint() ? word : b.Emit(Op::OpBitcast, type, {word});
    if (width == 64) {
      const uint32_t second = words.at(next++);
      return b.Emit(Op::OpBitcast, type, {b.Emit(Op::OpCompositeConstruct, t.Vector(t.Uint(), 2), {word, second})});
    }
    if (t.IsFloatType(type)) return b.Emit(Op::OpFConvert, type, {b.Emit(Op::OpBitcast, t.Float(32), {word})});
    const uint32_t narrowUnsigned = t.Int(width, false);
    const uint32_t narrow = b.Emit(Op::OpUConvert, narrowUnsigned, {word});
    return narrowUnsigned == type ? narrow : b.Emit(Op::OpBitcast, type, {narrow});
  }
  uint32_t FromWord(Builder& b, uint32_t word, uint32_t type) {
    size_t next = 0;
    return FromWords(b, {word}, next, type);
  }

  // ---- Functions --------------------------------------------------------------

  bool NeedsRewrite(const ir::Instruction& inst) {
    switch (inst.opcode) {
      case Op::OpCooperativeMatrixLoadKHR: case Op::OpCooperativeMatrixStoreKHR: case Op::OpCooperativeMatrixMulAddKHR:
      case Op::OpCooperativeMatrixLengthKHR:
        return true;
      case Op::OpLoad: return builtinVars_.count(inst.Operand(0)) != 0;
      case Op::OpControlBarrier: case Op::OpMemoryBarrier: return true;
      default: break;
    }
    const char* name = spv::OpToString(inst.opcode);
    if (std::string_view(name).starts_with("OpGroup") || std::string_view(name).starts_with("OpSubgroup")) return true;
    if (std::string_view(name).starts_with("OpCooperativeMatrix")) return true;
    if (inst.typeId && MatrixType(inst.typeId)) return !KeepsMatrices(inst.opcode);
    return false;
  }

  void RewriteFunction(ir::Function& f) {
    for (const ir::Block& block : f.blocks)
      for (const ir::Instruction& inst : block.instructions)
        if (inst.resultId) defs_[inst.resultId] = inst;
    for (size_t bi = 0; bi < f.blocks.size(); ++bi) {
      std::vector<ir::Instruction>& list = f.blocks[bi].instructions;
      if (std::none_of(list.begin(), list.end(), [&](const ir::Instruction& inst) { return NeedsRewrite(inst); })) continue;
      std::vector<ir::Instruction> rest(std::make_move_iterator(list.begin() + 1), std::make_move_iterator(list.end()));
      list.erase(list.begin() + 1, list.end());
      for (ir::Instruction& inst : rest) {
        if (!NeedsRewrite(inst)) {
          f.blocks[bi].instructions.push_back(std::move(inst));
          continue;
        }
        Builder b(C(), f, bi, f.blocks[bi].instructions.size());
        Rewrite(b, inst);
        if (b.block() != bi) Fail("internal error: a rewrite left its block");
      }
    }
  }

  void Rewrite(Builder& b, const ir::Instruction& inst) {
    switch (inst.opcode) {
      case Op::OpCooperativeMatrixLoadKHR: return LoadOrStore(b, inst, false);
      case Op::OpCooperativeMatrixStoreKHR: return LoadOrStore(b, inst, true);
      case Op::OpCooperativeMatrixMulAddKHR: return MulAdd(b, inst);
      case Op::OpCooperativeMatrixLengthKHR: {
        const Matrix* matrix = MatrixType(inst.Operand(0));
        if (!matrix) Fail(Describe(inst) + ": the operand is not a cooperative matrix type");
        ++result_.matrixOps;
        b.Emit(Op::OpCopyObject, inst.typeId, {b.U(matrix->length)}, inst.resultId);
        return;
      }
      case Op::OpLoad: {
        ++result_.subgroupOps;
        b.Emit(Op::OpCopyObject, inst.typeId, {BuiltinValue(b, builtinVars_.at(inst.Operand(0)), inst.typeId)}, inst.resultId);
        return;
      }
      case Op::OpControlBarrier: case Op::OpMemoryBarrier: return WidenBarrier(b, inst);
      case Op::OpCompositeConstruct: {
        const Matrix& matrix = *MatrixType(inst.typeId);
        if (inst.operands.size() != 1) Fail(Describe(inst) + ": a matrix is constructed from one value");
        b.Emit(Op::OpCompositeConstruct, inst.typeId, std::vector<uint32_t>(matrix.length, inst.operands[0]), inst.resultId);
        return;
      }
      default: break;
    }
    if (inst.typeId && MatrixType(inst.typeId)) {
      if (!IsElementWise(inst.opcode)) Fail(Describe(inst) + " on cooperative matrices is not emulated");
      return ElementWise(b, inst);
    }
    if (CombinerOf(inst.opcode)) return GroupArithmetic(b, inst);
    return GroupOperation(b, inst);
  }

  // A barrier of Subgroup scope covers the virtual subgroup: several real ones.
  void WidenBarrier(Builder& b, const ir::Instruction& inst) {
    ir::Instruction copy = inst;
    const size_t scopes = inst.opcode == Op::OpControlBarrier ? 2 : 1;
    bool widened = false;
    for (size_t i = 0; i < scopes; ++i)
      if (T().ConstantValue(copy.operands[i]) == kScopeSubgroup) {
        copy.operands[i] = b.U(kScopeWorkgroup);
        widened = true;
      }
    if (widened) {
      const uint32_t semanticsId = copy.operands[scopes];
      auto semantics = T().ConstantValue(semanticsId);
      if (!semantics) Fail(Describe(inst) + ": memory semantics are not constant");
      const uint32_t subgroupMemory = static_cast<uint32_t>(spv::MemorySemanticsMask::SubgroupMemory);
      if (*semantics & subgroupMemory)
        copy.operands[scopes] = b.U((*semantics & ~subgroupMemory) | static_cast<uint32_t>(spv::MemorySemanticsMask::WorkgroupMemory));
    }
    b.EmitVoid(copy.opcode, copy.operands);
  }

  // ---- Matrix operations ------------------------------------------------------

  // The (row, col) of each element this invocation holds.
  // The layout is linear: the lane's part once, each element's constant part XORed in.
  std::vector<std::pair<uint32_t, uint32_t>> Coordinates(Builder& b, const Matrix& matrix) {
    FunctionState fs{dummyFunction_};
    fs.lane = Lane(b);
    const uint32_t laneRow = RegisterCoordinate(b, fs, *matrix.layout, b.U(0), false);
    const uint32_t laneCol = RegisterCoordinate(b, fs, *matrix.layout, b.U(0), true);
    std::vector<std::pair<uint32_t, uint32_t>> coords;
    for (uint32_t e = 0; e < matrix.length; ++e) {
      const Coord part = matrix.layout->CoordinateOf(0, e);
      coords.emplace_back(b.Xor(laneRow, b.U(part.row)), b.Xor(laneCol, b.U(part.col)));
    }
    return coords;
  }

  void LoadOrStore(Builder& b, const ir::Instruction& inst, bool store) {
    ++result_.matrixOps;
    const uint32_t pointer = inst.Operand(0);
    const uint32_t object = store ? inst.Operand(1) : 0;
    const Matrix& matrix = store ? MatrixOperand(inst, object, "Object") : *MatrixType(inst.typeId);
    const size_t layoutAt = store ? 2 : 1;
    auto memoryLayout = T().ConstantValue(inst.Operand(layoutAt));
    if (!memoryLayout || *memoryLayout > 1)
      Fail(Describe(inst) + ": only constant RowMajor and ColumnMajor layouts are emulated");
    if (inst.operands.size() <= layoutAt + 1) Fail(Describe(inst) + ": a Stride is needed");
    const uint32_t strideId = inst.Operand(layoutAt + 1);
    if (T().ScalarWidth(T().TypeOf(strideId)) != 32) Fail(Describe(inst) + ": only 32-bit strides are emulated");
    const uint32_t stride = b.AsIntType(strideId, T().Uint());

    // The pointer is an access chain whose last index walks the elements: each
    // element gets the same chain with that index moved.
    auto def = defs_.find(pointer);
    if (def == defs_.end() || (def->second.opcode != Op::OpAccessChain && def->second.opcode != Op::OpInBoundsAccessChain) ||
        def->second.operands.size() < 2)
      Fail(Describe(inst) + ": the Pointer must be an access chain into an array in the same function");
    const ir::Instruction chain = def->second;
    const ir::Instruction* pointerType = T().GlobalDef(chain.typeId);
    const uint32_t pointee = pointerType ? pointerType->Operand(1) : 0;
    const uint32_t component = matrix.info.componentType;
    const bool sameBits = pointee == component ||
                          (T().ScalarWidth(pointee) == T().ScalarWidth(component) && T().IsIntType(pointee) && T().IsIntType(component));
    if (!sameBits)
      Fail(Describe(inst) + ": loads and stores through a pointer to another type than the component type are not emulated");
    const uint32_t lastIndex = chain.operands.back();
    if (T().ScalarWidth(T().TypeOf(lastIndex)) != 32) Fail(Describe(inst) + ": only 32-bit access chain indices are emulated");
    const uint32_t first = b.AsIntType(lastIndex, T().Uint());
    const bool rowMajor = *memoryLayout == 0;

    const auto coords = Coordinates(b, matrix);
    std::vector<uint32_t> elements;
    for (uint32_t e = 0; e < matrix.length; ++e) {
      const auto [row, col] = coords[e];
      const uint32_t offset = rowMajor ? b.Add(b.Mul(row, stride), col) : b.Add(b.Mul(col, stride), row);
      std::vector<uint32_t> operands(chain.operands.begin(), chain.operands.end() - 1);
      operands.push_back(b.Add(first, offset));
      const uint32_t element = b.Emit(chain.opcode, chain.typeId, operands);
      if (store) {
        uint32_t value = b.Emit(Op::OpCompositeExtract, component, {object, e});
        if (pointee != component) value = b.Emit(Op::OpBitcast, pointee, {value});
        b.EmitVoid(Op::OpStore, {element, value});
      } else {
        uint32_t value = b.Emit(Op::OpLoad, pointee, {element});
        if (pointee != component) value = b.Emit(Op::OpBitcast, component, {value});
        elements.push_back(value);
      }
    }
    if (!store) b.Emit(Op::OpCompositeConstruct, inst.typeId, elements, inst.resultId);
  }

  // Writes every element of `value` to its (row, col) of a rows x cols row-major
  // block at `offset` words into the region (replicas write the same word).
  void Scatter(Builder& b, uint32_t base, uint32_t offset, uint32_t value, const Matrix& matrix, bool transpose = false,
               const std::function<uint32_t(uint32_t)>& convert = nullptr) {
    const auto coords = Coordinates(b, matrix);
    const uint32_t width = transpose ? matrix.rows : matrix.cols;
    for (uint32_t e = 0; e < matrix.length; ++e) {
      uint32_t element = b.Emit(Op::OpCompositeExtract, matrix.info.componentType, {value, e});
      uint32_t type = matrix.info.componentType;
      if (convert) {
        element = convert(element);
        type = T().TypeOf(element);
      }
      const auto [row, col] = coords[e];
      const uint32_t at = transpose ? b.Add(b.Mul(col, b.U(width)), row) : b.Add(b.Mul(row, b.U(width)), col);
      StoreWord(b, base, b.Add(b.U(offset), at), ToWords(b, element, type)[0]);
    }
  }

  // Converts a scalar to the MulAdd's Result component type.
  uint32_t ToResultType(Builder& b, uint32_t value, uint32_t to, bool isSigned) {
    TypeManager& t = T();
    const uint32_t from = t.TypeOf(value);
    if (from == to) return value;
    if (t.IsFloatType(to) != t.IsFloatType(from)) Fail("MulAdd between integer and floating-point matrices is not emulated");
    if (t.IsFloatType(to)) return b.Emit(Op::OpFConvert, to, {value});
    const uint32_t toWidth = t.ScalarWidth(to);
    if (t.ScalarWidth(from) == toWidth) return b.Emit(Op::OpBitcast, to, {value});
    const uint32_t wide = isSigned ? b.Emit(Op::OpSConvert, t.Int(toWidth, true), {value}) : b.Emit(Op::OpUConvert, t.Int(toWidth, false), {value});
    return t.TypeOf(wide) == to ? wide : b.Emit(Op::OpBitcast, to, {wide});
  }

  void NoContraction(uint32_t id) {
    m_.annotations.emplace_back(Op::OpDecorate, 0, 0, std::vector<uint32_t>{id, static_cast<uint32_t>(spv::Decoration::NoContraction)});
  }

  void MulAdd(Builder& b, const ir::Instruction& inst) {
    ++result_.matrixOps;
    const Matrix& a = MatrixOperand(inst, inst.Operand(0), "A");
    const Matrix& bm = MatrixOperand(inst, inst.Operand(1), "B");
    const Matrix& c = MatrixOperand(inst, inst.Operand(2), "C");
    const Matrix& r = *MatrixType(inst.typeId);
    const uint32_t M = r.rows, N = r.cols, K = a.cols;
    if (a.rows != M || bm.rows != K || bm.cols != N || c.rows != M || c.cols != N)
      Fail(Describe(inst) + ": the shapes of A, B, C and Result do not agree");
    const uint32_t operands = inst.operands.size() > 3 ? inst.operands[3] : 0;
    if (operands & static_cast<uint32_t>(spv::CooperativeMatrixOperandsMask::SaturatingAccumulationKHR))
      Fail(Describe(inst) + ": saturating accumulation is not emulated yet");
    auto signedBit = [&](spv::CooperativeMatrixOperandsMask bit) { return (operands & static_cast<uint32_t>(bit)) != 0; };
    const bool aSigned = signedBit(spv::CooperativeMatrixOperandsMask::MatrixASignedComponentsKHR);
    const bool bSigned = signedBit(spv::CooperativeMatrixOperandsMask::MatrixBSignedComponentsKHR);
    const bool cSigned = signedBit(spv::CooperativeMatrixOperandsMask::MatrixCSignedComponentsKHR);
    Require(M * K + K * N);

    Barrier(b);
    const uint32_t base = RegionBase(b);
    Scatter(b, base, 0, inst.Operand(0), a);
    Scatter(b, base, M * K, inst.Operand(1), bm);
    Barrier(b);

    const uint32_t resultType = r.info.componentType;
    const bool isFloat = T().IsFloatType(resultType);
    const auto coords = Coordinates(b, r);
    std::vector<uint32_t> elements;
    for (uint32_t e = 0; e < r.length; ++e) {
      const auto [row, col] = coords[e];
      uint32_t acc = ToResultType(b, b.Emit(Op::OpCompositeExtract, c.info.componentType, {inst.Operand(2), e}), resultType, cSigned);
      const uint32_t aRow = b.Mul(row, b.U(K));
      for (uint32_t k = 0; k < K; ++k) {
        const uint32_t x = ToResultType(b, FromWord(b, LoadWord(b, base, b.Add(aRow, b.U(k))), a.info.componentType), resultType, aSigned);
        const uint32_t y = ToResultType(b, FromWord(b, LoadWord(b, base, b.Add(b.U(M * K + k * N), col)), bm.info.componentType),
                                        resultType, bSigned);
        const uint32_t product = b.Emit(isFloat ? Op::OpFMul : Op::OpIMul, resultType, {x, y});
        acc = b.Emit(isFloat ? Op::OpFAdd : Op::OpIAdd, resultType, {acc, product});
        if (isFloat) {
          NoContraction(product);
          NoContraction(acc);
        }
      }
      elements.push_back(acc);
    }
    b.Emit(Op::OpCompositeConstruct, inst.typeId, elements, inst.resultId);
  }

  // Arithmetic and conversions element by element; a conversion into a matrix laid
  // out otherwise moves its elements through the region.
  void ElementWise(Builder& b, const ir::Instruction& inst) {
    ++result_.matrixOps;
    const Matrix& r = *MatrixType(inst.typeId);
    const uint32_t component = r.info.componentType;
    Op op = inst.opcode;
    if (op == Op::OpMatrixTimesScalar && !T().IsFloatType(component)) op = Op::OpIMul;
    if (op == Op::OpMatrixTimesScalar) op = Op::OpFMul;
    // Decorations of the result (NoContraction, FPRoundingMode, ...) belong to each element's operation.
    std::vector<ir::Instruction> decorations;
    std::erase_if(m_.annotations, [&](const ir::Instruction& a) {
      if (a.opcode != Op::OpDecorate || a.Operand(0) != inst.resultId) return false;
      decorations.push_back(a);
      return true;
    });
    auto decorate = [&](uint32_t id) {
      for (ir::Instruction d : decorations) {
        d.operands[0] = id;
        m_.annotations.push_back(d);
      }
    };
    const Matrix* source = IsConversion(inst.opcode) ? &MatrixOperand(inst, inst.Operand(0), "the operand") : nullptr;
    if (source && (source->rows != r.rows || source->cols != r.cols))
      Fail(Describe(inst) + ": a conversion between matrices of different shapes");
    auto elementOf = [&](uint32_t operand, uint32_t e) {
      const Matrix* matrix = MatrixValue(operand);
      return matrix ? b.Emit(Op::OpCompositeExtract, matrix->info.componentType, {operand, e}) : operand;
    };
    if (source && !SameMap(*source->layout, *r.layout)) {
      Require(r.rows * r.cols);
      Barrier(b);
      const uint32_t base = RegionBase(b);
      Scatter(b, base, 0, inst.Operand(0), *source, false, [&](uint32_t element) {
        const uint32_t converted = b.Emit(op, component, {element});
        decorate(converted);
        return converted;
      });
      Barrier(b);
      std::vector<uint32_t> elements;
      const auto coords = Coordinates(b, r);
      for (uint32_t e = 0; e < r.length; ++e)
        elements.push_back(FromWord(b, LoadWord(b, base, b.Add(b.Mul(coords[e].first, b.U(r.cols)), coords[e].second)), component));
      b.Emit(Op::OpCompositeConstruct, inst.typeId, elements, inst.resultId);
      return;
    }
    for (uint32_t operand : inst.operands)
      if (const Matrix* matrix = MatrixValue(operand); matrix && !SameMap(*matrix->layout, *r.layout))
        Fail(Describe(inst) + ": operands laid out unlike the result");
    std::vector<uint32_t> elements;
    for (uint32_t e = 0; e < r.length; ++e) {
      std::vector<uint32_t> operands;
      for (uint32_t operand : inst.operands) operands.push_back(elementOf(operand, e));
      const uint32_t element = b.Emit(op, component, operands);
      decorate(element);
      elements.push_back(element);
    }
    b.Emit(Op::OpCompositeConstruct, inst.typeId, elements, inst.resultId);
  }

  // ---- Group operations ---------------------------------------------------------

  void CheckSubgroupScope(const ir::Instruction& inst) {
    if (T().ConstantValue(inst.Operand(0)) != kScopeSubgroup) Fail(Describe(inst) + ": only Subgroup scope is emulated");
  }

  // Publishes every invocation's `value` in the region (word plane w of lane L at
  // w * S + L) between barriers; read(lane) then returns that lane's value.
  struct Exchange {
    uint32_t base = 0;
    uint32_t type = 0;
    uint32_t words = 0;
  };
  Exchange Publish(Builder& b, uint32_t value) {
    Exchange x;
    x.type = T().TypeOf(value);
    x.words = WordCount(x.type);
    Require(x.words * S_);
    Barrier(b);
    x.base = RegionBase(b);
    const uint32_t lane = Lane(b);
    const std::vector<uint32_t> words = ToWords(b, value, x.type);
    for (uint32_t w = 0; w < x.words; ++w) StoreWord(b, x.base, b.Add(b.U(w * S_), lane), words[w]);
    Barrier(b);
    return x;
  }
  uint32_t Read(Builder& b, const Exchange& x, uint32_t lane) {
    std::vector<uint32_t> words;
    for (uint32_t w = 0; w < x.words; ++w) words.push_back(LoadWord(b, x.base, b.Add(b.U(w * S_), lane)));
    size_t next = 0;
    return FromWords(b, words, next, x.type);
  }
  // A lane index kept inside the virtual subgroup (out-of-range ids are undefined in SPIR-V).
  uint32_t Wrap(Builder& b, uint32_t lane) { return b.And(b.AsIntType(lane, T().Uint()), b.U(S_ - 1)); }

  uint32_t GlslImport() {
    for (const ir::Instruction& inst : m_.extInstImports)
      if (ir::DecodeString(inst.operands) == "GLSL.std.450") return inst.resultId;
    const uint32_t id = m_.TakeId();
    m_.extInstImports.emplace_back(Op::OpExtInstImport, 0, id, ir::EncodeString("GLSL.std.450"));
    return id;
  }

  uint32_t Combine(Builder& b, const Combiner& combiner, uint32_t type, uint32_t x, uint32_t y) {
    if (combiner.op == Op::OpExtInst) return b.Emit(Op::OpExtInst, type, {GlslImport(), combiner.glsl, x, y});
    return b.Emit(combiner.op, type, {x, y});
  }

  // The identity of a combiner for one scalar type, as the constant's bits.
  uint32_t Identity(Op group, uint32_t type) {
    TypeManager& t = T();
    const ir::Instruction* def = t.GlobalDef(type);
    if (def && def->opcode == Op::OpTypeVector) {
      const uint32_t component = Identity(group, def->Operand(0));
      const uint32_t id = m_.TakeId();
      t.AddGlobal(ir::Instruction(Op::OpConstantComposite, type, id, std::vector<uint32_t>(def->Operand(1), component)));
      return id;
    }
    if (def && def->opcode == Op::OpTypeBool) {
      const bool value = group == Op::OpGroupNonUniformLogicalAnd;
      const uint32_t id = m_.TakeId();
      t.AddGlobal(ir::Instruction(value ? Op::OpConstantTrue : Op::OpConstantFalse, type, id, {}));
      return id;
    }
    const uint32_t width = t.ScalarWidth(type);
    if (width > 32) Fail("64-bit subgroup arithmetic is not emulated");
    const uint32_t all = width == 32 ? ~0u : (1u << width) - 1;
    const bool isSigned = t.IsSignedInt(type);
    auto signExtended = [&](uint32_t bits) { return isSigned && width < 32 && (bits >> (width - 1)) & 1 ? bits | ~all : bits; };
    uint32_t bits = 0;
    const bool half = width == 16;
    switch (group) {
      case Op::OpGroupNonUniformIAdd: case Op::OpGroupNonUniformFAdd: case Op::OpGroupNonUniformBitwiseOr:
      case Op::OpGroupNonUniformBitwiseXor: case Op::OpGroupNonUniformUMax:
        bits = 0; break;
      case Op::OpGroupNonUniformIMul: bits = 1; break;
      case Op::OpGroupNonUniformFMul: bits = half ? 0x3c00 : 0x3f800000; break;
      case Op::OpGroupNonUniformFMin: bits = half ? 0x7c00 : 0x7f800000; break;
      case Op::OpGroupNonUniformFMax: bits = half ? 0xfc00 : 0xff800000; break;
      case Op::OpGroupNonUniformUMin: case Op::OpGroupNonUniformBitwiseAnd: bits = signExtended(all); break;
      case Op::OpGroupNonUniformSMin: bits = all >> 1; break;
      case Op::OpGroupNonUniformSMax: bits = signExtended((all >> 1) + 1); break;
      default: Fail("internal error: no identity");
    }
    const uint32_t id = m_.TakeId();
    t.AddGlobal(ir::Instruction(Op::OpConstant, type, id, {bits}));
    return id;
  }

  void GroupArithmetic(Builder& b, const ir::Instruction& inst) {
    CheckSubgroupScope(inst);
    ++result_.subgroupOps;
    const Combiner combiner = *CombinerOf(inst.opcode);
    const auto operation = static_cast<spv::GroupOperation>(inst.Operand(1));
    const uint32_t type = inst.typeId;
    const Exchange x = Publish(b, inst.Operand(2));
    uint32_t result = 0;
    switch (operation) {
      case spv::GroupOperation::Reduce: {
        result = Read(b, x, b.U(0));
        for (uint32_t j = 1; j < S_; ++j) result = Combine(b, combiner, type, result, Read(b, x, b.U(j)));
        break;
      }
      case spv::GroupOperation::ClusteredReduce: {
        auto cluster = T().ConstantValue(inst.Operand(3));
        if (!cluster || !*cluster || (*cluster & (*cluster - 1)) || *cluster > S_) Fail(Describe(inst) + ": bad ClusterSize");
        const uint32_t first = b.And(Lane(b), b.U(~(*cluster - 1)));
        result = Read(b, x, first);
        for (uint32_t j = 1; j < *cluster; ++j) result = Combine(b, combiner, type, result, Read(b, x, b.Add(first, b.U(j))));
        break;
      }
      case spv::GroupOperation::InclusiveScan: case spv::GroupOperation::ExclusiveScan: {
        const bool inclusive = operation == spv::GroupOperation::InclusiveScan;
        const uint32_t lane = Lane(b);
        result = Identity(inst.opcode, type);
        for (uint32_t j = 0; j < S_; ++j) {
          const uint32_t take = b.Emit(inclusive ? Op::OpULessThanEqual : Op::OpULessThan, T().Bool(), {b.U(j), lane});
          const uint32_t combined = Combine(b, combiner, type, result, Read(b, x, b.U(j)));
          result = b.Emit(Op::OpSelect, type, {take, combined, result});
        }
        break;
      }
      default: Fail(Describe(inst) + ": group operation " + std::to_string(inst.Operand(1)) + " is not emulated");
    }
    b.Emit(Op::OpCopyObject, type, {result}, inst.resultId);
  }

  void GroupOperation(Builder& b, const ir::Instruction& inst) {
    TypeManager& t = T();
    switch (inst.opcode) {
      case Op::OpGroupNonUniformElect:
        CheckSubgroupScope(inst);
        ++result_.subgroupOps;
        b.Emit(Op::OpIEqual, inst.typeId, {Lane(b), b.U(0)}, inst.resultId);
        return;
      case Op::OpGroupNonUniformBroadcast: case Op::OpGroupNonUniformBroadcastFirst: case Op::OpGroupNonUniformShuffle:
      case Op::OpGroupNonUniformShuffleXor: case Op::OpGroupNonUniformShuffleUp: case Op::OpGroupNonUniformShuffleDown: {
        CheckSubgroupScope(inst);
        ++result_.subgroupOps;
        const Exchange x = Publish(b, inst.Operand(1));
        uint32_t source = 0;
        switch (inst.opcode) {
          case Op::OpGroupNonUniformBroadcastFirst: source = b.U(0); break;  // every invocation is active
          case Op::OpGroupNonUniformBroadcast: case Op::OpGroupNonUniformShuffle: source = Wrap(b, inst.Operand(2)); break;
          case Op::OpGroupNonUniformShuffleXor: source = Wrap(b, b.Xor(Lane(b), b.AsIntType(inst.Operand(2), t.Uint()))); break;
          case Op::OpGroupNonUniformShuffleUp:
            source = Wrap(b, b.Emit(Op::OpISub, t.Uint(), {Lane(b), b.AsIntType(inst.Operand(2), t.Uint())}));
            break;
          default: source = Wrap(b, b.Add(Lane(b), b.AsIntType(inst.Operand(2), t.Uint()))); break;
        }
        b.Emit(Op::OpCopyObject, inst.typeId, {Read(b, x, source)}, inst.resultId);
        return;
      }
      case Op::OpGroupNonUniformAll: case Op::OpGroupNonUniformAny: {
        CheckSubgroupScope(inst);
        ++result_.subgroupOps;
        const Exchange x = Publish(b, inst.Operand(1));
        const Op combine = inst.opcode == Op::OpGroupNonUniformAll ? Op::OpLogicalAnd : Op::OpLogicalOr;
        uint32_t result = Read(b, x, b.U(0));
        for (uint32_t j = 1; j < S_; ++j) result = b.Emit(combine, t.Bool(), {result, Read(b, x, b.U(j))});
        b.Emit(Op::OpCopyObject, inst.typeId, {result}, inst.resultId);
        return;
      }
      case Op::OpGroupNonUniformBallot: {
        CheckSubgroupScope(inst);
        ++result_.subgroupOps;
        const Exchange x = Publish(b, inst.Operand(1));
        std::vector<uint32_t> words;
        for (uint32_t w = 0; w < 4; ++w) {
          uint32_t word = b.U(0);
          for (uint32_t j = 32 * w; j < std::min(S_, 32 * w + 32); ++j)
            word = b.Or(word, b.ShiftLeft(LoadWord(b, x.base, b.U(j)), b.U(j - 32 * w)));
          words.push_back(word);
        }
        b.Emit(Op::OpCompositeConstruct, inst.typeId, words, inst.resultId);
        return;
      }
      case Op::OpGroupNonUniformBallotBitExtract: {
        CheckSubgroupScope(inst);
        ++result_.subgroupOps;
        const uint32_t index = b.AsIntType(inst.Operand(2), t.Uint());
        const uint32_t word = b.Emit(Op::OpVectorExtractDynamic, t.Uint(), {inst.Operand(1), b.ShiftRight(index, b.U(5))});
        const uint32_t bit = b.And(b.ShiftRight(word, b.And(index, b.U(31))), b.U(1));
        b.Emit(Op::OpINotEqual, inst.typeId, {bit, b.U(0)}, inst.resultId);
        return;
      }
      case Op::OpGroupNonUniformBallotBitCount: {
        CheckSubgroupScope(inst);
        ++result_.subgroupOps;
        if (inst.Operand(1) != static_cast<uint32_t>(spv::GroupOperation::Reduce))
          Fail(Describe(inst) + ": only the Reduce form is emulated");
        uint32_t count = b.U(0);
        for (uint32_t w = 0; 32 * w < S_; ++w) {
          const uint32_t valid = S_ - 32 * w >= 32 ? ~0u : (1u << (S_ - 32 * w)) - 1;
          const uint32_t word = b.And(b.Emit(Op::OpCompositeExtract, t.Uint(), {inst.Operand(2), w}), b.U(valid));
          count = b.Add(count, b.Emit(Op::OpBitCount, t.Uint(), {word}));
        }
        b.Emit(Op::OpCopyObject, inst.typeId, {b.AsIntType(count, inst.typeId)}, inst.resultId);
        return;
      }
      default:
        Fail(Describe(inst) + " is not emulated by the virtual device");
    }
  }

  void DropCooperativeMatrixDeclarations() {
    std::erase_if(m_.capabilities, [](const ir::Instruction& inst) {
      return inst.Operand(0) == static_cast<uint32_t>(spv::Capability::CooperativeMatrixKHR);
    });
    std::erase_if(m_.extensions, [](const ir::Instruction& inst) { return ir::DecodeString(inst.operands) == "SPV_KHR_cooperative_matrix"; });
  }

  ir::Module& m_;
  const Profile& profile_;
  const RewriteRequest& request_;
  RewriteResult& result_;
  const uint32_t S_;
  uint32_t invocations_ = 0;
  std::map<uint32_t, Matrix> matrices_;
  std::map<uint32_t, spv::BuiltIn> builtinVars_;
  std::map<uint32_t, ir::Instruction> defs_;
  std::optional<TypeManager> types_;
  LowerOptions options_;
  LowerStats stats_;
  std::optional<Context> context_;
  uint32_t scratchVar_ = 0, wordsPerSubgroup_ = 0, scratchWords_ = 0;
  ir::Function dummyFunction_;  // RegisterCoordinate reads only FunctionState::lane
};

}  // namespace

RewriteResult RewriteForProfile(std::span<const uint32_t> words, const Profile& profile, const RewriteRequest& request) {
  RewriteResult result;
  try {
    if (!profile.RunsSubgroupSize(request.subgroupSize))
      Fail("profile " + profile.name + " does not run subgroups of " + std::to_string(request.subgroupSize));
    ir::Module module;
    if (std::string error = ir::Parse(words, module); !error.empty()) Fail("cannot parse the module: " + error);
    FreezeSpecialization(module, request.specialization.value_or(Specialization{}));
    Rewriter(module, profile, request, result).Run();
    result.words = ir::Emit(module);
  } catch (const LowerError& error) {
    result.error = error.message;
    return result;
  }
  if (request.validate)
    if (std::string error = ValidateModule(result.words); !error.empty()) {
      result.error = "the rewritten module does not validate: " + error;
      result.words.clear();
      return result;
    }
  result.ok = true;
  return result;
}

}  // namespace coopmat::virt
