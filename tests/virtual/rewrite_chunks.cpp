// ChunkSync (rewrite_internal.h): the chunks of a virtual subgroup larger than
// lavapipe's meet through counters in one Workgroup array:
//   per virtual subgroup v, at v * stride:
//     [0]                          meetings arrived (one per chunk per meeting)
//     [1 + j]                      chunk j's meetings so far (its turn)
//     [1 + C + p * C + j]          chunk j's active lanes in the exchange of parity p
//     [1 + 3C + p * C + j]         the site chunk j met at in the meeting of parity p
//     [1 + 5C + p * S * W + w * S + lane]   word w of a lane's value in exchange half p
//   then the workgroup's: [0] app barriers arrived, [1 + r] lavapipe subgroup r's count.
// An exchange writes the half its turn's parity selects: every chunk has passed the
// previous meeting, so nobody still reads what the turn before last wrote there. The
// sites make a meeting an operation's: counting arrivals alone would let chunks at two
// different operations (a shuffle in each branch of a lane-dependent `if`) exchange
// values that a real device never gives, so such a meeting is a fault.
//
// Order: lavapipe resumes the subgroups it suspended at a barrier one after another in
// index order (lp_state_cs.c's coroutine loop); a barrier is only a switch, so chunks may
// yield different numbers of times (WaitFor does). Left so, the chunks leaving a meeting
// always run in one order: the last to arrive, then the others by index. Shuffled, a chunk
// leaves a meeting only once it has yielded d times there, waiting included, d drawn below
// C: the last to arrive yields d times, the others, which yielded at least once waiting,
// up to d - 1 more, and the chunks with smaller draws run first. The draw is folded into the
// wait's loop, so it adds no suspension point for lavapipe to compile. The entry draws too;
// the wrapper's last meeting does not (see WrapEntryPoints).
#include "rewrite_internal.h"

#include <algorithm>
#include <bit>

namespace coopmat::virt::detail {

using spv::Op;

void ChunkSync::Start() {
  variable_ = c_.m.TakeId();
  stride_ = c_.m.TakeId();
  half_ = c_.m.TakeId();
  // The seeds are tickets from the fault buffer; without one the order stays lavapipe's.
  shuffled_ = c_.profile.chunkOrder == Profile::ChunkOrder::kShuffled && c_.faults->Available();
  if (shuffled_) seed_ = c_.m.TakeId();
  c_.result.chunkOrder = ChunkOrderName(shuffled_ ? Profile::ChunkOrder::kShuffled : Profile::ChunkOrder::kFixed);
}

uint32_t ChunkSync::Pointer(Builder& b, uint32_t word) {
  used_ = true;
  return b.Emit(Op::OpAccessChain, T().Pointer(spv::StorageClass::Workgroup, T().Uint()), {variable_, word});
}

uint32_t ChunkSync::Load(Builder& b, uint32_t word) { return b.Emit(Op::OpLoad, T().Uint(), {Pointer(b, word)}); }

uint32_t ChunkSync::AtomicLoad(Builder& b, uint32_t word) {
  return b.Emit(Op::OpAtomicLoad, T().Uint(), {Pointer(b, word), b.U(kScopeWorkgroup), b.U(0)});
}

void ChunkSync::Store(Builder& b, uint32_t word, uint32_t value) { b.EmitVoid(Op::OpStore, {Pointer(b, word), value}); }

// Lavapipe switches to the workgroup's other subgroups only at a workgroup barrier.
void ChunkSync::Yield(Builder& b) {
  const uint32_t workgroup = b.U(kScopeWorkgroup);
  b.EmitVoid(Op::OpControlBarrier, {workgroup, workgroup, c_.C().BarrierSemantics()});
}

uint32_t ChunkSync::WaitFor(Builder& b, uint32_t counter, uint32_t target, uint32_t least) {
  TypeManager& t = T();
  const uint32_t waited = b.Variable(t.Uint());
  b.EmitVoid(Op::OpStore, {waited, b.U(0)});
  b.While(
      [&] {
        const uint32_t yields = b.Emit(Op::OpLoad, t.Uint(), {waited});
        uint32_t stay = b.Emit(Op::OpULessThan, t.Bool(), {AtomicLoad(b, counter), target});
        if (least) stay = b.Emit(Op::OpLogicalOr, t.Bool(), {stay, b.Emit(Op::OpULessThan, t.Bool(), {yields, least})});
        const uint32_t patient = b.Emit(Op::OpULessThan, t.Bool(), {yields, b.U(kPatience)});
        return b.Emit(Op::OpLogicalAnd, t.Bool(), {stay, patient});
      },
      [&] {
        Yield(b);
        b.EmitVoid(Op::OpStore, {waited, b.Add(b.Emit(Op::OpLoad, t.Uint(), {waited}), b.U(1))});
      });
  return b.Emit(Op::OpUGreaterThanEqual, t.Bool(), {AtomicLoad(b, counter), target});
}

uint32_t ChunkSync::Hash(Builder& b, uint32_t x) {
  x = b.Xor(x, b.ShiftRight(x, b.U(16)));
  x = b.Mul(x, b.U(0x7feb352du));
  x = b.Xor(x, b.ShiftRight(x, b.U(15)));
  x = b.Mul(x, b.U(0x846ca68bu));
  return b.Xor(x, b.ShiftRight(x, b.U(16)));
}

void ChunkSync::TakeSeed(Builder& b) {
  if (!shuffled_) return;
  TypeManager& t = T();
  const uint32_t ticket = b.Variable(t.Uint());
  Elected(b, [&] { b.EmitVoid(Op::OpStore, {ticket, c_.faults->TakeTicket(b)}); });
  c_.RequireCapability(spv::Capability::GroupNonUniformBallot);
  const uint32_t own = b.Emit(Op::OpGroupNonUniformBroadcastFirst, t.Uint(), {b.U(kScopeSubgroup), b.Emit(Op::OpLoad, t.Uint(), {ticket})});
  b.EmitVoid(Op::OpStore, {seed_, Hash(b, own)});
}

uint32_t ChunkSync::Draw(Builder& b, uint32_t key) {
  if (!shuffled_) return 0;
  // C = S / N, both powers of two: the hash's top bits are a draw below C.
  const uint32_t bits = static_cast<uint32_t>(std::countr_zero(c_.Chunks()));
  const uint32_t seed = b.Emit(Op::OpLoad, T().Uint(), {seed_});
  return b.ShiftRight(Hash(b, b.Xor(seed, key)), b.U(32 - bits));
}

void ChunkSync::Elected(Builder& b, const std::function<void()>& code) {
  c_.If(b, b.Emit(Op::OpGroupNonUniformElect, T().Bool(), {b.U(kScopeSubgroup)}), code);
}

uint32_t ChunkSync::Chunk(Builder& b) {
  return b.Mod(LoadBuiltin(b, spv::BuiltIn::SubgroupId), b.U(c_.Chunks()));
}

uint32_t ChunkSync::SubgroupBase(Builder& b) { return b.Mul(c_.SubgroupId(b), stride_); }

uint32_t ChunkSync::Turn(Builder& b) { return Load(b, b.Add(SubgroupBase(b), b.Add(b.U(1), Chunk(b)))); }

uint32_t ChunkSync::Meet(Builder& b, uint32_t turn, const char* what) {
  TypeManager& t = T();
  const uint32_t C = c_.Chunks(), lavapipeSubgroups = c_.LavapipeSubgroupsPerWorkgroup();
  const uint32_t site = c_.faults->Site(what);
  const uint32_t base = SubgroupBase(b), next = b.Add(turn, b.U(1));
  const uint32_t own = b.Add(base, b.Add(b.U(1), Chunk(b)));
  const uint32_t sites = b.Add(base, b.Add(b.U(1 + 3 * C), b.Mul(b.And(turn, b.U(1)), b.U(C))));
  Elected(b, [&] {
    Store(b, b.Add(sites, Chunk(b)), b.U(site));
    b.Emit(Op::OpAtomicIAdd, t.Uint(), {Pointer(b, base), b.U(kScopeWorkgroup), b.U(0), b.U(1)});
    Store(b, own, next);
  });
  // The chunks this subgroup has: fewer than C only in a workgroup's last, partial subgroup.
  const bool partial = lavapipeSubgroups % C != 0;
  uint32_t here = b.U(C);
  if (partial) {
    const uint32_t left = b.Emit(Op::OpISub, t.Uint(), {b.U(lavapipeSubgroups), b.Mul(c_.SubgroupId(b), b.U(C))});
    here = b.Emit(Op::OpExtInst, t.Uint(), {c_.GlslImport(), 38 /* UMin */, left, b.U(C)});
  }
  // Draw keys: a meeting's turn times two, an app barrier's plus one, the entry's all ones.
  const uint32_t came = WaitFor(b, base, b.Mul(here, next), Draw(b, b.ShiftLeft(turn, b.U(1))));
  // Every chunk there must have come to this site; `other` is one that did not.
  uint32_t same = c_.True(), other = b.U(site);
  for (uint32_t j = 0; j < C; ++j) {
    const uint32_t there = Load(b, b.Add(sites, b.U(j)));
    uint32_t agrees = b.Emit(Op::OpIEqual, t.Bool(), {there, b.U(site)});
    if (partial) agrees = b.Emit(Op::OpLogicalOr, t.Bool(), {agrees, b.Emit(Op::OpUGreaterThanEqual, t.Bool(), {b.U(j), here})});
    other = b.Emit(Op::OpSelect, t.Uint(), {agrees, other, there});
    same = b.Emit(Op::OpLogicalAnd, t.Bool(), {same, agrees});
  }
  const uint32_t met = b.Emit(Op::OpLogicalAnd, t.Bool(), {came, same});
  Elected(b, [&] {
    c_.If(b, b.Emit(Op::OpLogicalNot, t.Bool(), {met}), [&] {
      const uint32_t kind = b.Emit(Op::OpSelect, t.Uint(), {came, b.U(faults::kDifferentOperations), b.U(faults::kMeetingTimedOut)});
      c_.faults->Report(b, kind, site, b.Emit(Op::OpSelect, t.Uint(), {came, other, b.U(0)}));
    });
  });
  return met;
}

void ChunkSync::MeetWholeWorkgroup(Builder& b, bool drawOrder) {
  const uint32_t lavapipeSubgroups = c_.LavapipeSubgroupsPerWorkgroup();
  const uint32_t base = b.Mul(b.U(c_.SubgroupsPerWorkgroup()), stride_);
  const uint32_t own = b.Add(base, b.Add(b.U(1), LoadBuiltin(b, spv::BuiltIn::SubgroupId)));
  const uint32_t turn = Load(b, own), next = b.Add(turn, b.U(1));
  Elected(b, [&] {
    b.Emit(Op::OpAtomicIAdd, T().Uint(), {Pointer(b, base), b.U(kScopeWorkgroup), b.U(0), b.U(1)});
    Store(b, own, next);
  });
  const uint32_t least = drawOrder ? Draw(b, b.Or(b.ShiftLeft(turn, b.U(1)), b.U(1))) : 0;
  const uint32_t came = WaitFor(b, base, b.Mul(b.U(lavapipeSubgroups), next), least);
  const uint32_t site = c_.faults->Site("workgroup barrier");
  Elected(b, [&] {
    c_.If(b, b.Emit(Op::OpLogicalNot, T().Bool(), {came}), [&] { c_.faults->Report(b, b.U(faults::kMeetingTimedOut), site, b.U(0)); });
  });
}

void ChunkSync::WorkgroupBarrier(Builder& b, const ir::Instruction& barrier) {
  MeetWholeWorkgroup(b, true);
  // The barrier's own memory scope and semantics (image and storage memory as the app asked).
  b.EmitVoid(Op::OpMemoryBarrier, {barrier.Operand(1), barrier.Operand(2)});
}

ChunkSync::Exchange ChunkSync::Publish(Builder& b, uint32_t value) {
  TypeManager& t = T();
  const uint32_t C = c_.Chunks();
  Exchange x;
  x.type = t.TypeOf(value);
  x.words = c_.WordCount(x.type);
  exchangeWords_ = std::max(exchangeWords_, x.words);
  x.turn = Turn(b);
  const uint32_t parity = b.And(x.turn, b.U(1)), base = SubgroupBase(b);
  x.base = b.Add(base, b.Add(b.U(1 + 5 * C), b.Emit(Op::OpIMul, t.Uint(), {parity, half_})));
  const uint32_t lane = c_.Lane(b);
  const std::vector<uint32_t> words = c_.ToWords(b, value, x.type);
  for (uint32_t w = 0; w < x.words; ++w) Store(b, b.Add(x.base, b.Add(b.U(w * c_.S), lane)), words[w]);
  const uint32_t masks = b.Add(base, b.Add(b.U(1 + C), b.Mul(parity, b.U(C))));
  // The chunk's active lanes (before the branch that only one of them takes).
  c_.RequireCapability(spv::Capability::GroupNonUniformBallot);
  const uint32_t ballot = b.Emit(Op::OpGroupNonUniformBallot, t.Vector(t.Uint(), 4), {b.U(kScopeSubgroup), c_.True()});
  const uint32_t active = b.Emit(Op::OpCompositeExtract, t.Uint(), {ballot, 0}), own = b.Add(masks, Chunk(b));
  Elected(b, [&] { Store(b, own, active); });
  x.complete = Meet(b, x.turn, "exchange");
  for (uint32_t j = 0; j < C; ++j) x.activeWords.push_back(Load(b, b.Add(masks, b.U(j))));
  return x;
}

uint32_t ChunkSync::Active(Builder& b, const Exchange& x, uint32_t lane) {
  TypeManager& t = T();
  const uint32_t chunk = b.Div(lane, b.U(c_.N));
  uint32_t mask = x.activeWords[0];
  for (uint32_t j = 1; j < x.activeWords.size(); ++j)
    mask = b.Emit(Op::OpSelect, t.Uint(), {b.Emit(Op::OpIEqual, t.Bool(), {chunk, b.U(j)}), x.activeWords[j], mask});
  const uint32_t bit = b.And(b.ShiftRight(mask, b.Mod(lane, b.U(c_.N))), b.U(1));
  return b.Emit(Op::OpLogicalAnd, t.Bool(), {x.complete, b.Emit(Op::OpINotEqual, t.Bool(), {bit, b.U(0)})});
}

uint32_t ChunkSync::Read(Builder& b, const Exchange& x, uint32_t lane) {
  std::vector<uint32_t> words;
  for (uint32_t w = 0; w < x.words; ++w) words.push_back(Load(b, b.Add(x.base, b.Add(b.U(w * c_.S), lane))));
  size_t next = 0;
  return c_.FromWords(b, words, next, x.type);
}

bool ChunkSync::WrapsEntryPoints() const {
  if (used_) return true;
  if (!shuffled_) return false;
  return std::any_of(c_.m.globals.begin(), c_.m.globals.end(), [](const ir::Instruction& inst) {
    return inst.opcode == Op::OpVariable && inst.Operand(0) == static_cast<uint32_t>(spv::StorageClass::Workgroup);
  });
}

// Each entry point becomes a function the new entry point calls between two meetings of
// every chunk: the area zeroed before anything runs, and, at the end, every chunk waits
// for the others. Lavapipe resumes the subgroups suspended at a barrier only while none
// has finished; a chunk that returned while others still met would leave them unfinished.
// So the entry draws the order of the app's first stretch, but the last meeting none.
void ChunkSync::WrapEntryPoints() {
  TypeManager& t = T();
  c_.RequireCapability(spv::Capability::GroupNonUniform);  // SubgroupId and the elections
  const uint32_t entryKey = ~0u;
  const size_t originals = c_.m.functions.size();
  for (ir::Instruction& entry : c_.m.entryPoints) {
    const uint32_t body = entry.Operand(1);
    size_t index = 0;
    while (index < originals && c_.m.functions[index].definition.resultId != body) ++index;
    if (index == originals) Fail("entry point %" + std::to_string(body) + " has no function");
    ir::Function wrapper;
    wrapper.definition = c_.m.functions[index].definition;
    wrapper.definition.resultId = c_.m.TakeId();
    wrapper.end = c_.m.functions[index].end;
    wrapper.blocks.emplace_back();
    wrapper.blocks.front().instructions.emplace_back(Op::OpLabel, 0, c_.m.TakeId(), std::vector<uint32_t>{});
    c_.m.functions.push_back(std::move(wrapper));
    ir::Function& f = c_.m.functions.back();
    Builder b(c_.C(), f, 0, 1);
    c_.current = "the end of entry point %" + std::to_string(body);
    const uint32_t total = b.Add(b.Mul(b.U(c_.SubgroupsPerWorkgroup()), stride_), b.U(1 + c_.LavapipeSubgroupsPerWorkgroup()));
    b.Loop(LoadBuiltin(b, spv::BuiltIn::LocalInvocationIndex), total, b.U(c_.invocations),
           [&](uint32_t word) { Store(b, word, b.U(0)); });
    TakeSeed(b);
    Yield(b);
    if (const uint32_t times = Draw(b, b.U(entryKey))) b.Loop(b.U(0), times, b.U(1), [&](uint32_t) { Yield(b); });
    b.Emit(Op::OpFunctionCall, t.Void(), {body});
    MeetWholeWorkgroup(b, false);
    b.EmitVoid(Op::OpMemoryBarrier, {b.U(kScopeWorkgroup), c_.C().BarrierSemantics()});
    b.EmitVoid(Op::OpReturn, {});
    for (ir::Instruction& mode : c_.m.executionModes)
      if (mode.Operand(0) == body) mode.operands[0] = f.definition.resultId;
    entry.operands[1] = f.definition.resultId;
    // The Function variables the builder made (the wait's counter) join the entry block.
    std::vector<ir::Instruction>& variables = c_.C().newVariables;
    f.blocks.front().instructions.insert(f.blocks.front().instructions.begin() + 1, std::make_move_iterator(variables.begin()),
                                         std::make_move_iterator(variables.end()));
    variables.clear();
  }
}

void ChunkSync::Finish() {
  TypeManager& t = T();
  const uint32_t C = c_.Chunks();
  const uint32_t half = std::max<uint32_t>(exchangeWords_, 1) * c_.S, stride = 1 + 5 * C + 2 * half;
  t.AddGlobal(ir::Instruction(Op::OpConstant, t.Uint(), stride_, {stride}));
  t.AddGlobal(ir::Instruction(Op::OpConstant, t.Uint(), half_, {half}));
  if (!used_) return;
  const uint64_t words = uint64_t(stride) * c_.SubgroupsPerWorkgroup() + 1 + c_.LavapipeSubgroupsPerWorkgroup();
  c_.result.scratchBytes += static_cast<uint32_t>(words * 4);
  const uint32_t array = t.UndecoratedArray(t.Uint(), t.UintConstant(static_cast<uint32_t>(words)));
  t.AddGlobal(ir::Instruction(Op::OpVariable, t.Pointer(spv::StorageClass::Workgroup, array), variable_,
                              {static_cast<uint32_t>(spv::StorageClass::Workgroup)}));
  if (shuffled_)
    t.AddGlobal(ir::Instruction(Op::OpVariable, t.Pointer(spv::StorageClass::Private, t.Uint()), seed_,
                                {static_cast<uint32_t>(spv::StorageClass::Private)}));
  if (c_.m.SpirvMinor() >= 4)
    for (ir::Instruction& entry : c_.m.entryPoints) {
      entry.operands.push_back(variable_);
      if (shuffled_) entry.operands.push_back(seed_);
    }
}

}  // namespace coopmat::virt::detail
