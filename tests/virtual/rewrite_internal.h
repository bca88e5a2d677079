// The parts of the virtual device's rewrite (rewrite.h), one per concern:
//  * Core (rewrite.cpp): the module, its types, the virtual subgroup's lane and id and
//    its region of the one Workgroup scratch array, values as 32-bit words; rewrite.cpp
//    also walks the functions and hands each instruction to one of the parts.
//  * MatrixRewrite (rewrite_matrix.cpp): cooperative matrices become per-invocation
//    arrays laid out by the profile; Load, Store, MulAdd, Length, element-wise ops.
//  * SubgroupModel (rewrite_subgroup.cpp): virtual subgroups on lavapipe's own (N lanes,
//    N = min(16, the profile's largest size); lavapipe runs no more than 16 in step). At
//    size N they pass through, shuffles aside (a lane out of range or inactive gives a
//    poison value, as SPIR-V leaves it undefined); a smaller size is an aligned segment
//    of a lavapipe subgroup, its built-ins and operations confined to the segment; a
//    larger one is S / N consecutive lavapipe subgroups ("chunks").
//  * ChunkSync (rewrite_chunks.cpp): how the chunks of a larger virtual subgroup meet
//    and exchange values without workgroup barriers in divergent control flow.
//  * FaultReport (rewrite_faults.cpp): the records the rewritten code leaves when it
//    finds a fault (rewrite.h's faults), through a device address the layer gave.
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
      : m(module), profile(target), request(asked), result(out), S(asked.subgroupSize), N(asked.lavapipeSubgroupSize) {}

  ir::Module& m;
  const Profile& profile;
  const RewriteRequest& request;
  RewriteResult& result;
  const uint32_t S;          // the virtual subgroup size
  const uint32_t N;          // lavapipe's own: S, a multiple of S, or S / Chunks()
  uint32_t invocations = 0;  // the largest workgroup of an entry point
  bool sameWorkgroupSize = true;  // every entry point has `invocations`
  bool partialSubgroups = false;  // some entry point's workgroup is not whole subgroups
  // Definitions in the function being rewritten, by result id.
  std::map<uint32_t, ir::Instruction> defs;

  // Compute entry points with constant workgroup sizes (sets `invocations`).
  void CheckEntryPoints();
  // After the module-level passes that the type manager would not see.
  void StartTypes();
  TypeManager& T() { return *types_; }
  Context& C() { return *context_; }
  // Whether virtual subgroups are segments of lavapipe's (S < N), or several of them (S > N).
  bool Segmented() const { return S < N; }
  bool Chunked() const { return S > N; }
  uint32_t Chunks() const { return Chunked() ? S / N : 1; }
  class ChunkSync* chunks = nullptr;  // set when Chunked()
  class FaultReport* faults = nullptr;
  std::string current;  // the instruction being rewritten ("OpFoo %12"), for fault sites
  void RequireCapability(spv::Capability capability);
  uint32_t True();

  // lavapipe's own lane and subgroup id, and the virtual ones.
  uint32_t RealLane(Builder& b);
  uint32_t Lane(Builder& b);
  uint32_t SubgroupId(Builder& b);
  // The first lavapipe lane of this invocation's virtual subgroup (0 unless Segmented).
  uint32_t SegmentBase(Builder& b);
  // The virtual subgroups, and lavapipe's, of a workgroup of `invocations`.
  uint32_t SubgroupsPerWorkgroup() const { return (invocations + S - 1) / S; }
  uint32_t LavapipeSubgroupsPerWorkgroup() const { return (invocations + N - 1) / N; }

  // Scratch: one Workgroup uint array, a region of wordsPerSubgroup per virtual subgroup,
  // used by one virtual subgroup at a time between subgroup barriers (every invocation of
  // a subgroup reaches a matrix operation: SPV_KHR_cooperative_matrix's uniform control flow).
  void Require(uint32_t words) { scratchWords_ = std::max(scratchWords_, words); }
  // Returns a bool id: whether the whole subgroup met at this barrier (false where chunks
  // never came or came to another operation: a fault); `what` names the barrier's site.
  uint32_t SubgroupBarrier(Builder& b, const char* what = "barrier");
  // if (condition) body(), as a structured selection.
  void If(Builder& b, uint32_t condition, const std::function<void()>& body);
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
  uint32_t true_ = 0;
};

class FaultReport {
 public:
  explicit FaultReport(Core& core) : c_(core) {}
  // A new fault site: `what` at the instruction being rewritten (RewriteResult::sites).
  uint32_t Site(const std::string& what);
  // Appends a record of fault `kind` (a uint id, faults::Kind) at `site` with `detail`
  // (a uint id) for the invocation that runs it. Nothing where no address was given.
  void Report(Builder& b, uint32_t kind, uint32_t site, uint32_t detail);
  // Whether there is a buffer (RewriteRequest::faultAddress) to report to and take tickets from.
  bool Available() const { return c_.request.faultAddress != 0; }
  // A uint id: the buffer's ticket count before this invocation adds one (faults::kTicketWord),
  // so no two calls at run time see the same. Only where Available().
  uint32_t TakeTicket(Builder& b);
  // The capabilities and addressing model the records' pointers need.
  void Finish();

 private:
  uint32_t WordPointer(Builder& b, uint32_t word);  // a PhysicalStorageBuffer pointer to word `word`
  uint32_t Scope();  // of the records' atomics

  Core& c_;
  uint32_t base_ = 0;  // the buffer's address, a 64-bit constant
  bool used_ = false;
};

// A cooperative matrix type after the rewrite: an array of `length` elements.
struct Matrix {
  CoopMatType info;
  std::optional<ElementLayout> layout;
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
  std::vector<uint32_t> StoredElements(Builder& b, uint32_t object, const Matrix& matrix);
  std::vector<uint32_t> ThroughRegion(Builder& b, uint32_t value, const Matrix& from, const Matrix& to, const std::string& what,
                                      const std::function<uint32_t(uint32_t)>& convert = nullptr);
  // Returns a bool id: whether the subgroup met where the replicas were compared (true
  // when the layout has none).
  uint32_t Scatter(Builder& b, uint32_t base, uint32_t offset, uint32_t value, const Matrix& matrix, bool transpose = false,
                   const std::function<uint32_t(uint32_t)>& convert = nullptr);
  uint32_t ToResultType(Builder& b, uint32_t value, uint32_t to, bool isSigned);
  void NoContraction(uint32_t id);
  void MulAdd(Builder& b, const ir::Instruction& inst);
  void ElementWise(Builder& b, const ir::Instruction& inst);
  // An OpCompositeExtract/Insert of a matrix element past the length (RewriteResult::pastLengthAccesses).
  bool PastLength(const ir::Instruction& inst);
  void PastLengthAccess(Builder& b, const ir::Instruction& inst);
  // All bits set in a component type (a NaN in the float ones).
  uint32_t Loud(uint32_t componentType);

  Core& c_;
  EncodedFloats& encoded_;
  std::map<uint32_t, Matrix> matrices_;
};

// GroupNonUniform arithmetic: the plain instruction (or GLSL.std.450 number) that combines two values.
struct Combiner {
  spv::Op op = spv::Op::OpNop;
  uint32_t glsl = 0;  // GLSL.std.450 instruction when op is OpExtInst
};

// Virtual subgroups of S = C x N lanes: lavapipe subgroup r is chunk r % C of virtual
// subgroup r / C. Lavapipe runs the subgroups of a workgroup one after another, as
// coroutines that switch only at workgroup barriers; so the chunks meet through
// counters in Workgroup memory, using barriers only to yield: a chunk arrives (one
// invocation adds 1 to its subgroup's counter), then yields until every chunk of its
// subgroup has arrived. The app's own workgroup barriers count every chunk of the
// workgroup the same way, so that no chunk passes one while another waits inside a
// subgroup operation. Each chunk must reach each operation of its subgroup with at least
// one invocation (a chunk that never comes is waited for kPatience yields, then the
// result is poison); every chunk of a workgroup reaches its barriers, as SPIR-V requires.
// Shuffled (Profile::chunkOrder), every chunk leaves each meeting, the app's barriers and
// the entry after a number of yields drawn below C, so that the chunks run their next
// stretch in an order that varies from meeting to meeting, workgroup and dispatch.
class ChunkSync {
 public:
  static constexpr uint32_t kPatience = 1u << 16;
  explicit ChunkSync(Core& core) : c_(core) {}
  void Start();  // after Core::StartTypes
  // A meeting of the chunks of this invocation's subgroup: its number for this chunk
  // (read before Meet; every chunk of a subgroup counts its meetings alike), then Meet,
  // which returns a bool id, whether all came.
  uint32_t Turn(Builder& b);
  // Every chunk records the meeting's site (`what` at the instruction being rewritten):
  // chunks that met at different sites, or a wait in vain, make a fault and `false`.
  uint32_t Meet(Builder& b, uint32_t turn, const char* what);
  uint32_t Meet(Builder& b, const char* what) { return Meet(b, Turn(b), what); }
  // The app's OpControlBarrier of Workgroup execution scope, over every chunk.
  void WorkgroupBarrier(Builder& b, const ir::Instruction& barrier);
  // An exchange of `value`: every active invocation publishes it in the half of its
  // subgroup's area that `turn` selects (with its chunk's active lanes), then they meet.
  struct Exchange {
    uint32_t turn = 0, base = 0, type = 0, words = 0, complete = 0;
    std::vector<uint32_t> activeWords;  // per chunk: the lanes that published (bit l % N of word l / N)
  };
  Exchange Publish(Builder& b, uint32_t value);
  // Whether virtual lane `lane` (a uint id below S) published, and its value.
  uint32_t Active(Builder& b, const Exchange& x, uint32_t lane);
  uint32_t Read(Builder& b, const Exchange& x, uint32_t lane);
  // Whether the entry points need WrapEntryPoints: some code met or exchanged (then the
  // area exists and must be zeroed), or the order is shuffled and the module has Workgroup
  // memory, where a missing barrier could show (the entry draws the first stretch's order).
  // A module with neither keeps lavapipe's own: wrapping makes lavapipe compile it as a
  // coroutine, which took the exec lanes' GetCoordinate cases twice the time.
  bool WrapsEntryPoints() const;
  // Wraps every entry point: the area zeroed and the chunk's seed taken first (then one
  // workgroup barrier, which every chunk reaches, and the entry's drawn yields), the app's
  // code, then a meeting of every chunk of the workgroup.
  void WrapEntryPoints();
  void Finish();

 private:
  TypeManager& T() { return c_.T(); }
  uint32_t Pointer(Builder& b, uint32_t word);
  uint32_t Load(Builder& b, uint32_t word);
  uint32_t AtomicLoad(Builder& b, uint32_t word);
  void Store(Builder& b, uint32_t word, uint32_t value);
  void Yield(Builder& b);
  // Waits (yielding) until word `counter` reaches `target` and, where `least` (a uint id) is
  // given, it has yielded `least` times, at most kPatience times: whether `counter` did.
  uint32_t WaitFor(Builder& b, uint32_t counter, uint32_t target, uint32_t least = 0);
  // Every lavapipe subgroup of the workgroup arrives and waits for the others (leaving in a
  // drawn order where `drawOrder` and shuffled).
  void MeetWholeWorkgroup(Builder& b, bool drawOrder);
  // Shuffled: the chunk's seed, a hash of a ticket its elected invocation takes (the same in
  // all its invocations, so they all draw alike).
  void TakeSeed(Builder& b);
  // Shuffled: a uint id below C drawn from the seed and `key` (a uint id that differs between
  // the chunk's draws), the yields it takes to leave; 0 (no id) in the fixed order.
  uint32_t Draw(Builder& b, uint32_t key);
  uint32_t Hash(Builder& b, uint32_t x);  // a uint id: x's bits mixed (lowbias32)
  // One invocation of this lavapipe subgroup does `code`.
  void Elected(Builder& b, const std::function<void()>& code);
  uint32_t SubgroupBase(Builder& b);  // this virtual subgroup's part of the area
  uint32_t Chunk(Builder& b);         // this lavapipe subgroup's place in it

  Core& c_;
  // The Workgroup array; words per virtual subgroup and per exchange half (constants Finish defines).
  uint32_t variable_ = 0, stride_ = 0, half_ = 0;
  uint32_t exchangeWords_ = 0;          // the most words a value exchanged has
  bool used_ = false;
  bool shuffled_ = false;  // the order is drawn (Start decides)
  uint32_t seed_ = 0;      // shuffled: the chunk's seed, a Private uint
};

class SubgroupModel {
 public:
  explicit SubgroupModel(Core& core) : c_(core) {}
  // Segmented or chunked: the module's own subgroup built-in variables go, their loads
  // become the virtual values (before the type manager).
  void TakeBuiltins();
  bool Handles(const ir::Instruction& inst) const;
  void Rewrite(Builder& b, const ir::Instruction& inst);
  // Counts the group operations of `f` that lavapipe runs as they are (RewriteResult::lavapipeSubgroupOps).
  void CountPassedThrough(const ir::Function& f);

 private:
  TypeManager& T() { return c_.T(); }
  bool Confined() const { return c_.Segmented() || c_.Chunked(); }
  uint32_t BuiltinValue(Builder& b, spv::BuiltIn which, uint32_t type);
  void CheckSubgroupScope(const ir::Instruction& inst);
  // A value of every type that no correct read gives: all bits set (NaN for floats, true for bools).
  uint32_t Poison(uint32_t type);
  uint32_t Choose(Builder& b, uint32_t condition, uint32_t type, uint32_t yes, uint32_t no);
  uint32_t Equal(Builder& b, uint32_t type, uint32_t x, uint32_t y);
  // The value of virtual lane `source` (below S), or Poison unless `valid` and that lane is
  // active; `ownChunk`: the source is in this invocation's lavapipe subgroup (no meeting).
  uint32_t Gather(Builder& b, uint32_t value, uint32_t type, uint32_t source, uint32_t valid, bool ownChunk = false);
  void Shuffle(Builder& b, const ir::Instruction& inst);
  // The words of a mask of virtual lanes (Eq, Ge, Gt, Le, Lt, or every lane for BuiltIn::Max), lane 0 first.
  std::vector<uint32_t> MaskWords(Builder& b, spv::BuiltIn which);
  // OpGroupNonUniformInverseBallot, BallotBitCount and BallotFind{LSB,MSB}: the virtual lanes' bits of a ballot value.
  uint32_t BallotValue(Builder& b, const ir::Instruction& inst);
  uint32_t Combine(Builder& b, const Combiner& combiner, uint32_t type, uint32_t x, uint32_t y);
  uint32_t Identity(spv::Op group, uint32_t type);
  // Segmented: the segment's bits of a lavapipe ballot of `predicate` (S <= 16 bits, lane 0 first).
  uint32_t SegmentBallot(Builder& b, uint32_t predicate);
  void SegmentArithmetic(Builder& b, const ir::Instruction& inst);
  void SegmentOperation(Builder& b, const ir::Instruction& inst);
  // Chunked: through ChunkSync's exchanges.
  uint32_t FirstActive(Builder& b, const ChunkSync::Exchange& x);
  void ChunkArithmetic(Builder& b, const ir::Instruction& inst);
  void ChunkOperation(Builder& b, const ir::Instruction& inst);
  void Barrier(Builder& b, const ir::Instruction& inst);

  Core& c_;
  std::map<uint32_t, spv::BuiltIn> builtinVars_;
};

}  // namespace coopmat::virt::detail
