#include "rewrite.h"

#include <algorithm>
#include <string_view>

#include "freeze.h"
#include "rewrite_internal.h"

namespace coopmat::virt {
namespace detail {

using spv::Op;

// ---- Core: what the matrix and the subgroup parts share -----------------------

void Core::CheckEntryPoints() {
  if (m.entryPoints.empty()) Fail("the module has no entry point");
  for (const ir::Instruction& entry : m.entryPoints)
    if (entry.Operand(0) != static_cast<uint32_t>(spv::ExecutionModel::GLCompute))
      Fail("the virtual device rewrites compute modules only; entry point %" + std::to_string(entry.Operand(1)) +
           " has execution model " + spv::ExecutionModelToString(static_cast<spv::ExecutionModel>(entry.Operand(0))));
  TypeManager t(m);
  // Workgroup size: a WorkgroupSize constant, else each entry point's LocalSize(Id).
  uint32_t fromConstant = 0;
  for (const ir::AppliedDecoration& d : ir::FindDecorations(m, spv::Decoration::BuiltIn))
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
  for (const ir::Instruction& entry : m.entryPoints) {
    uint32_t size = fromConstant;
    for (const ir::Instruction& mode : m.executionModes) {
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
    if (invocations && size != invocations) sameWorkgroupSize = false;
    if (size % S) partialSubgroups = true;
    invocations = std::max(invocations, size);
  }
}

void Core::RequireCapability(spv::Capability capability) {
  for (const ir::Instruction& inst : m.capabilities)
    if (inst.Operand(0) == static_cast<uint32_t>(capability)) return;
  m.capabilities.emplace_back(Op::OpCapability, 0, 0, std::vector<uint32_t>{static_cast<uint32_t>(capability)});
}

uint32_t Core::True() {
  if (!true_) {
    true_ = m.TakeId();
    T().AddGlobal(ir::Instruction(Op::OpConstantTrue, T().Bool(), true_, {}));
  }
  return true_;
}

uint32_t Core::RealLane(Builder& b) {
  RequireCapability(spv::Capability::GroupNonUniform);
  return LoadBuiltin(b, spv::BuiltIn::SubgroupLocalInvocationId);
}

uint32_t Core::Lane(Builder& b) {
  if (Segmented()) return b.And(RealLane(b), b.U(S - 1));
  if (Chunked()) return b.Add(b.Mul(b.Mod(LoadBuiltin(b, spv::BuiltIn::SubgroupId), b.U(Chunks())), b.U(N)), RealLane(b));
  return RealLane(b);
}

uint32_t Core::SegmentBase(Builder& b) { return Segmented() ? b.And(RealLane(b), b.U(~(S - 1))) : b.U(0); }

uint32_t Core::SubgroupId(Builder& b) {
  RequireCapability(spv::Capability::GroupNonUniform);
  const uint32_t real = LoadBuiltin(b, spv::BuiltIn::SubgroupId);
  if (Segmented()) return b.Add(b.Mul(real, b.U(N / S)), b.Div(RealLane(b), b.U(S)));
  if (Chunked()) return b.Div(real, b.U(Chunks()));
  return real;
}

// Execution and Workgroup memory of one subgroup: matrix operations are reached by the
// whole subgroup. Chunked: its chunks meet. Otherwise its lanes are those of one lavapipe
// subgroup, which lavapipe runs in step, so the memory part is all it needs; an execution
// barrier would be a workgroup one there (lp_bld_nir.c's visit_barrier), which subgroups on
// other paths never reach.
uint32_t Core::SubgroupBarrier(Builder& b, const char* what) {
  if (Chunked()) return chunks->Meet(b, what);
  b.EmitVoid(Op::OpMemoryBarrier, {b.U(kScopeSubgroup), C().BarrierSemantics()});
  return True();
}

void Core::If(Builder& b, uint32_t condition, const std::function<void()>& body) {
  const uint32_t selector = b.Emit(Op::OpSelect, T().Uint(), {condition, b.U(1), b.U(0)});
  b.Switch(selector, {1}, [&](size_t) { body(); }, [] {});  // case values are literals
}

uint32_t Core::RegionBase(Builder& b) { return b.Mul(SubgroupId(b), wordsPerSubgroup_); }

uint32_t Core::WordPointer(Builder& b, uint32_t base, uint32_t offset) {
  return b.Emit(Op::OpAccessChain, T().Pointer(spv::StorageClass::Workgroup, T().Uint()), {scratchVar_, b.Add(base, offset)});
}

void Core::StoreWord(Builder& b, uint32_t base, uint32_t offset, uint32_t word) {
  b.EmitVoid(Op::OpStore, {WordPointer(b, base, offset), word});
}

uint32_t Core::LoadWord(Builder& b, uint32_t base, uint32_t offset) {
  return b.Emit(Op::OpLoad, T().Uint(), {WordPointer(b, base, offset)});
}

void Core::FinishScratch() {
  TypeManager& t = T();
  t.AddGlobal(ir::Instruction(Op::OpConstant, t.Uint(), wordsPerSubgroup_, {std::max<uint32_t>(scratchWords_, 1)}));
  if (!scratchWords_) return;
  const uint64_t words = uint64_t(scratchWords_) * SubgroupsPerWorkgroup();
  result.scratchBytes = static_cast<uint32_t>(words * 4);
  if (request.sharedMemoryLimit && words * 4 > request.sharedMemoryLimit)
    Fail("the emulation needs " + std::to_string(words * 4) + " bytes of Workgroup memory, more than the real device's " +
         std::to_string(request.sharedMemoryLimit));
  const uint32_t array = t.UndecoratedArray(t.Uint(), t.UintConstant(static_cast<uint32_t>(words)));
  t.AddGlobal(ir::Instruction(Op::OpVariable, t.Pointer(spv::StorageClass::Workgroup, array), scratchVar_,
                              {static_cast<uint32_t>(spv::StorageClass::Workgroup)}));
  if (m.SpirvMinor() >= 4)
    for (ir::Instruction& entry : m.entryPoints) entry.operands.push_back(scratchVar_);
}

uint32_t Core::GlslImport() {
  for (const ir::Instruction& inst : m.extInstImports)
    if (ir::DecodeString(inst.operands) == "GLSL.std.450") return inst.resultId;
  const uint32_t id = m.TakeId();
  m.extInstImports.emplace_back(Op::OpExtInstImport, 0, id, ir::EncodeString("GLSL.std.450"));
  return id;
}

bool Core::IsArithmeticFloat(uint32_t type) { return T().IsFloatType(type) && !T().IsEncodedFloat(type); }

// What a type is declared as once EncodedFloats::Finish has made bfloat16 and fp8 unsigned integers.
std::vector<uint32_t> Core::Storage(uint32_t type) {
  const ir::Instruction* def = T().GlobalDef(type);
  if (!def) return {};
  if (def->opcode == Op::OpTypeVector) {
    std::vector<uint32_t> key = Storage(def->Operand(0));
    key.push_back(def->Operand(1));
    return key;
  }
  if (T().IsEncodedFloat(type)) return {static_cast<uint32_t>(Op::OpTypeInt), def->Operand(0), 0};
  std::vector<uint32_t> key = {static_cast<uint32_t>(def->opcode)};
  key.insert(key.end(), def->operands.begin(), def->operands.end());
  return key;
}

bool Core::SameStorage(uint32_t a, uint32_t b) { return a && b && Storage(a) == Storage(b); }

uint32_t Core::Reinterpret(Builder& b, uint32_t value, uint32_t type) {
  const uint32_t from = T().TypeOf(value);
  if (from == type) return value;
  return b.Emit(SameStorage(from, type) ? Op::OpCopyObject : Op::OpBitcast, type, {value});
}

uint32_t Core::WordCount(uint32_t type) {
  const ir::Instruction* def = T().GlobalDef(type);
  if (def && def->opcode == Op::OpTypeVector) return def->Operand(1) * WordCount(def->Operand(0));
  if (def && def->opcode == Op::OpTypeBool) return 1;
  const uint32_t width = T().ScalarWidth(type);
  if (width == 8 || width == 16 || width == 32) return 1;
  if (width == 64) return 2;
  Fail("values of type %" + std::to_string(type) + " cannot cross the virtual subgroup");
}

std::vector<uint32_t> Core::ToWords(Builder& b, uint32_t value, uint32_t type) {
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
  if (IsArithmeticFloat(type)) return {b.Emit(Op::OpBitcast, t.Uint(), {b.Emit(Op::OpFConvert, t.Float(32), {value})})};
  return {b.Emit(Op::OpUConvert, t.Uint(), {value})};  // 8 and 16-bit integers, bfloat16 and fp8: zero-extended bits
}

uint32_t Core::FromWords(Builder& b, const std::vector<uint32_t>& words, size_t& next, uint32_t type) {
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
  if (IsArithmeticFloat(type)) return b.Emit(Op::OpFConvert, type, {b.Emit(Op::OpBitcast, t.Float(32), {word})});
  if (t.IsEncodedFloat(type)) return b.Emit(Op::OpUConvert, type, {word});
  const uint32_t narrowUnsigned = t.Int(width, false);
  const uint32_t narrow = b.Emit(Op::OpUConvert, narrowUnsigned, {word});
  return narrowUnsigned == type ? narrow : b.Emit(Op::OpBitcast, type, {narrow});
}

uint32_t Core::FromWord(Builder& b, uint32_t word, uint32_t type) {
  size_t next = 0;
  return FromWords(b, {word}, next, type);
}

void Core::StartTypes() {
  types_.emplace(m);
  context_.emplace(m, *types_, options_, stats_);
  context_->vulkanMemoryModel =
      !m.memoryModel.empty() && m.memoryModel[0].Operand(1) == static_cast<uint32_t>(spv::MemoryModel::Vulkan);
  scratchVar_ = m.TakeId();
  wordsPerSubgroup_ = m.TakeId();
}

}  // namespace detail

namespace {

// Walks the functions and gives each instruction that needs it to the matrix or the subgroup part.
class Rewriter {
 public:
  Rewriter(ir::Module& module, const Profile& profile, const RewriteRequest& request, RewriteResult& result)
      : core_(module, profile, request, result), encoded_(core_), matrices_(core_, encoded_), subgroups_(core_), chunks_(core_),
        faults_(core_) {
    core_.faults = &faults_;
  }

  void Run() {
    core_.CheckEntryPoints();
    matrices_.ReplaceTypes();
    subgroups_.TakeBuiltins();  // before the type manager: it indexes the globals by position
    core_.StartTypes();
    if (core_.Chunked()) {
      core_.chunks = &chunks_;
      chunks_.Start();
    }
    matrices_.ExpandConstants();
    for (ir::Function& f : core_.m.functions) RewriteFunction(f);
    if (core_.Chunked() && chunks_.WrapsEntryPoints()) chunks_.WrapEntryPoints();
    if (core_.Chunked()) chunks_.Finish();
    core_.FinishScratch();
    matrices_.DropDeclarations();
    core_.C().scratch.Finalize();  // lists the built-ins this rewrite reads in the interfaces
    faults_.Finish();
    encoded_.Finish();             // last: every part above uses the encoded types' ids
  }

 private:
  void RewriteFunction(ir::Function& f) {
    subgroups_.CountPassedThrough(f);
    for (const ir::Block& block : f.blocks)
      for (const ir::Instruction& inst : block.instructions)
        if (inst.resultId) core_.defs[inst.resultId] = inst;
    auto needsRewrite = [&](const ir::Instruction& inst) {
      return matrices_.Handles(inst) || encoded_.Handles(inst) || subgroups_.Handles(inst);
    };
    // A rewrite may emit loops (a subgroup of several lavapipe subgroups waits for its
    // parts): loop headers give their code a block of its own first.
    SplitLoopHeadersWith(core_.C(), f, needsRewrite);
    // A block with something to rewrite is rebuilt by appending: the code of each
    // rewrite goes at the end of the block being built, which may be a later block.
    for (size_t bi = 0; bi < f.blocks.size(); ++bi) {
      std::vector<ir::Instruction>& list = f.blocks[bi].instructions;
      if (std::none_of(list.begin(), list.end(), needsRewrite)) continue;
      const uint32_t label = f.blocks[bi].Label();
      std::vector<ir::Instruction> rest(std::make_move_iterator(list.begin() + 1), std::make_move_iterator(list.end()));
      list.erase(list.begin() + 1, list.end());
      size_t cursor = bi;
      for (ir::Instruction& inst : rest) {
        if (!needsRewrite(inst)) {
          f.blocks[cursor].instructions.push_back(std::move(inst));
          continue;
        }
        Builder b(core_.C(), f, cursor, f.blocks[cursor].instructions.size());
        core_.current = inst.resultId ? Describe(inst) : Describe(inst) + " #" + std::to_string(++voidOps_[inst.opcode]);
        if (matrices_.Handles(inst))
          matrices_.Rewrite(b, inst);
        else if (encoded_.Handles(inst))
          encoded_.Rewrite(b, inst);
        else
          subgroups_.Rewrite(b, inst);
        cursor = b.block();
        if (b.index() != f.blocks[cursor].instructions.size()) Fail("internal error: a rewrite left the cursor mid-block");
      }
      // The block's terminator now ends the last block built: its successors' OpPhis name that one.
      if (cursor != bi) RetargetPhis(f, f.blocks[cursor].instructions.back(), label, f.blocks[cursor].Label());
      bi = cursor;
    }
    // The Function variables the rewrites made join the entry block's.
    std::vector<ir::Instruction>& variables = core_.C().newVariables;
    std::vector<ir::Instruction>& entry = f.blocks.front().instructions;
    entry.insert(entry.begin() + 1, std::make_move_iterator(variables.begin()), std::make_move_iterator(variables.end()));
    variables.clear();
  }

  detail::Core core_;
  detail::EncodedFloats encoded_;
  detail::MatrixRewrite matrices_;
  detail::SubgroupModel subgroups_;
  detail::ChunkSync chunks_;
  detail::FaultReport faults_;
  std::map<spv::Op, uint32_t> voidOps_;  // fault sites' names for instructions without a result: "OpFoo %0 #2"
};

}  // namespace

RewriteResult RewriteForProfile(std::span<const uint32_t> words, const Profile& profile, const RewriteRequest& request) {
  RewriteResult result;
  // What it receives must be valid: the product's output reaches lavapipe only through here.
  if (request.validate)
    if (std::string error = ValidateModule(words); !error.empty()) {
      result.error = "the module it was given does not validate: " + error;
      return result;
    }
  try {
    if (!profile.RunsSubgroupSize(request.subgroupSize))
      Fail("profile " + profile.name + " does not run subgroups of " + std::to_string(request.subgroupSize));
    const uint32_t S = request.subgroupSize, N = request.lavapipeSubgroupSize;
    if (!N || (S < N && N % S) || (S > N && S % N))
      Fail("lavapipe runs subgroups of " + std::to_string(N) + ", which can neither hold nor make up virtual subgroups of " +
           std::to_string(S) + " (LP_NATIVE_VECTOR_WIDTH must be 32 x the profile's largest size up to 16)");
    std::string error;
    const std::vector<uint32_t> frozen = FreezeWithSpirvTools(words, request.specialization.value_or(Specialization{}), error);
    if (frozen.empty()) Fail("freezing the specialization: " + error);
    ir::Module module;
    if (std::string parseError = ir::Parse(frozen, module); !parseError.empty()) Fail("cannot parse the module: " + parseError);
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
