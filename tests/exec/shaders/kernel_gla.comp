#version 450
// A real-class kernel: one chunk of gated linear attention (the delta-rule family's
// chunked form), one head per workgroup of NSG subgroups that take different roles:
//
//   G     = prefix sums of the log gates g        subgroup 0: subgroupInclusiveAdd, while
//   Araw  = Q K^T                                 subgroup 1 multiplies, and
//   QS    = Q S                                   the others multiply Q by the state, split
//                                                 into ET hi + lo parts (relaxed Acc <-> B conversions)
//   A     = Araw * exp(G[r] - G[c]) for c <= r, else 0   coopMatPerElementEXT reading G in
//                                                 shared memory, counting the masked elements
//                                                 there and recording each row's largest |A| in
//                                                 a buffer (functions with side effects)
//   O     = (A_hi + A_lo) V + exp(G[r]) QS        one subgroup per O tile (Acc f32 -> A ET hi/lo)
//   rows  = rowsum(A)                             the last subgroup: coopMatReduceEXT(Row), written
//                                                 through coopMatGetCoordinateEXT
//   S'    = exp(G[C-1]) S + Kd^T V, Kd = K * exp(G[C-1] - G[r])   state tiles dealt to subgroups
//                                                 1..NSG-1 unevenly (coopMatTransposeEXT of hi/lo)
//
// The state S (D x D f32) is staged in shared memory: 16 KB at D = 64. Every barrier is
// reached by the whole workgroup; every matrix operation by whole subgroups, inside
// branches and loops that differ between subgroups.
//
// Defines: ET (float16_t or bfloat16_t), D (32 or 64), NSG (subgroups per workgroup, >= 4).
// ACC_BF16 (with ET bfloat16_t): bfloat16 accumulators, as a delta-rule application picks on
// RDNA4 (16x16x16 bf16 bf16 bf16 bf16). bfloat16 has no arithmetic: the element and combine
// functions compute in float and round back; no hi/lo splits (a bf16 accumulator holds no more
// than a bf16 A or B), one MulAdd per product; the state, A and QS are bf16 in shared memory.
// Spec constant 0: the workgroup size (NSG x the subgroup size).
// Bindings, per head h: 0 Q, 1 K, 2 V ([h][C][D] ET); 3 g ([h][C] f32); 4 S ([h][D][D]
// f32); 5 O out ([h][C][D] f32, bf16 with ACC_BF16); 6 S' out ([h][D][D] f32, bf16 with
// ACC_BF16); 7 stats out ([h][3C] uint: the bits of each row's largest |A| (as f32), the
// masked count of each row, the bits of rowsum(A) (as f32)).
#extension GL_KHR_cooperative_matrix : require
#extension GL_EXT_cooperative_matrix_maintenance1 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
#ifdef ENCODED_TYPES
#extension GL_EXT_bfloat16 : require
#endif
#if defined(ACC_BF16) && defined(NV_COMPARABLE)
#error "ACC_BF16 has no NV_COMPARABLE form"
#endif

layout(local_size_x_id = 0) in;

const uint T = 16;      // tile edge
const uint C = 16;      // tokens in the chunk
const uint DT = D / T;  // tiles along the head dimension

#ifdef ACC_BF16
#define AccE bfloat16_t
#else
#define AccE float
#endif
#define AccT coopmat<AccE, gl_ScopeSubgroup, T, T, gl_MatrixUseAccumulator>
#define ATile coopmat<ET, gl_ScopeSubgroup, T, T, gl_MatrixUseA>
#define BTile coopmat<ET, gl_ScopeSubgroup, T, T, gl_MatrixUseB>

layout(set = 0, binding = 0) readonly buffer Qb { ET q[]; };
layout(set = 0, binding = 1) readonly buffer Kb { ET k[]; };
layout(set = 0, binding = 2) readonly buffer Vb { ET v[]; };
layout(set = 0, binding = 3) readonly buffer Gb { float g[]; };
layout(set = 0, binding = 4) readonly buffer Sb { float s[]; };
layout(set = 0, binding = 5) writeonly buffer Ob { AccE o[]; };
layout(set = 0, binding = 6) writeonly buffer SNb { AccE sNew[]; };
layout(set = 0, binding = 7) buffer Stats { uint stats[]; };

shared AccE sS[D * D];    // the state, row-major
shared AccE aRaw[C * C];  // Q K^T
shared AccE qs[C * D];    // Q S
shared float gsh[C];       // prefix sums of the gates
shared uint masked[C];     // elements the decay mask zeroed, per row
#ifdef NV_COMPARABLE
// Without GetCoordinate and Transpose (no NV spelling): round trips through shared
// memory instead, so that the module can be respelled NV (scripts/measure/kernel_vs_radv.py).
shared float rowScratch[T * T];
shared float transposeScratch[NSG * T * T];
#endif

// ---- Element functions (the maintenance1 per-element operations) -----------------
#ifdef ACC_BF16
// Each computes in float and rounds its result to bfloat16 once (the row maximum is that of
// the rounded values, which the accumulator holds).
bfloat16_t DecayMask(const in uint32_t row, const in uint32_t col, const in bfloat16_t a, const in uint32_t statBase) {
  if (col > row) {
    atomicAdd(masked[row], 1u);
    return bfloat16_t(0.0);
  }
  const bfloat16_t value = bfloat16_t(float(a) * exp(gsh[row] - gsh[col]));
  atomicMax(stats[statBase + row], floatBitsToUint(abs(float(value))));
  return value;
}
bfloat16_t DecayValue(const in uint32_t row, const in uint32_t col, const in bfloat16_t a) {
  return col > row ? bfloat16_t(0.0) : bfloat16_t(float(a) * exp(gsh[row] - gsh[col]));
}
bfloat16_t ScaleByExpG(const in uint32_t row, const in uint32_t col, const in bfloat16_t x) {
  return bfloat16_t(float(x) * exp(gsh[row]));
}
bfloat16_t DecayToEnd(const in uint32_t row, const in uint32_t col, const in bfloat16_t x) {
  return bfloat16_t(float(x) * exp(gsh[C - 1] - gsh[row]));
}
bfloat16_t Times(const in uint32_t row, const in uint32_t col, const in bfloat16_t x, const in float f) {
  return bfloat16_t(float(x) * f);
}
bfloat16_t Sum(const in bfloat16_t a, const in bfloat16_t b) { return bfloat16_t(float(a) + float(b)); }
#else
float DecayMask(const in uint32_t row, const in uint32_t col, const in float a, const in uint32_t statBase) {
  if (col > row) {
    atomicAdd(masked[row], 1u);
    return 0.0;
  }
  const float value = a * exp(gsh[row] - gsh[col]);
  atomicMax(stats[statBase + row], floatBitsToUint(abs(value)));
  return value;
}
float DecayValue(const in uint32_t row, const in uint32_t col, const in float a) {
  return col > row ? 0.0 : a * exp(gsh[row] - gsh[col]);
}
float ScaleByExpG(const in uint32_t row, const in uint32_t col, const in float x) { return x * exp(gsh[row]); }
float DecayToEnd(const in uint32_t row, const in uint32_t col, const in float x) { return x * exp(gsh[C - 1] - gsh[row]); }
float Times(const in uint32_t row, const in uint32_t col, const in float x, const in float f) { return x * f; }
float Sum(const in float a, const in float b) { return a + b; }


// x as ET hi + lo: two A (or B) tiles whose sum is x to ET's precision squared.
void SplitA(const in AccT x, out ATile hi, out ATile lo) {
  hi = ATile(x);
  const AccT back = AccT(hi);
  lo = ATile(x - back);
}
void SplitB(const in AccT x, out BTile hi, out BTile lo) {
  hi = BTile(x);
  const AccT back = AccT(hi);
  lo = BTile(x - back);
}
#endif

void main() {
  const uint h = gl_WorkGroupID.x, sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
  const uint qkv = h * C * D, state = h * D * D, statBase = h * 3 * C;
  for (uint i = gl_LocalInvocationIndex; i < D * D; i += gl_WorkGroupSize.x) sS[i] = AccE(s[state + i]);
  for (uint i = gl_LocalInvocationIndex; i < C; i += gl_WorkGroupSize.x) masked[i] = 0;
  barrier();

  // ---- Phase 1: three roles at once ----
  if (sg == 0) {
    // Prefix sums of the gates, a subgroup's width at a time (C may exceed it).
    float carry = 0.0;
    for (uint first = 0; first < C; first += gl_SubgroupSize) {
      const uint i = first + lane;
      const float sum = subgroupInclusiveAdd(i < C ? g[h * C + i] : 0.0) + carry;
      if (i < C) gsh[i] = sum;
      carry = subgroupShuffle(sum, gl_SubgroupSize - 1);
    }
  } else if (sg == 1) {
    AccT acc = AccT(AccE(0.0));
    for (uint d = 0; d < DT; ++d) {
      ATile qt;
      BTile kt;  // K^T: K's rows are its columns
      coopMatLoad(qt, q, qkv + d * T, D, gl_CooperativeMatrixLayoutRowMajor);
      coopMatLoad(kt, k, qkv + d * T, D, gl_CooperativeMatrixLayoutColumnMajor);
      acc = coopMatMulAdd(qt, kt, acc);
    }
    coopMatStore(acc, aRaw, 0, C, gl_CooperativeMatrixLayoutRowMajor);
  } else {
    for (uint dc = sg - 2; dc < DT; dc += NSG - 2) {
      AccT acc = AccT(AccE(0.0));
      for (uint d = 0; d < DT; ++d) {
        ATile qt;
        coopMatLoad(qt, q, qkv + d * T, D, gl_CooperativeMatrixLayoutRowMajor);
        AccT st;
        coopMatLoad(st, sS, d * T * D + dc * T, D, gl_CooperativeMatrixLayoutRowMajor);
#ifdef ACC_BF16
        acc = coopMatMulAdd(qt, BTile(st), acc);
#else
        BTile hi, lo;
        SplitB(st, hi, lo);
        acc = coopMatMulAdd(qt, hi, acc);
        acc = coopMatMulAdd(qt, lo, acc);
#endif
      }
      coopMatStore(acc, qs, dc * T, D, gl_CooperativeMatrixLayoutRowMajor);
    }
  }
  barrier();

  // ---- Phase 2: O tiles, then the row sums ----
  for (uint dc = sg; dc < DT; dc += NSG) {
    AccT a;
    coopMatLoad(a, aRaw, 0, C, gl_CooperativeMatrixLayoutRowMajor);
    coopMatPerElementEXT(a, a, DecayMask, statBase);
#ifdef ACC_BF16
    const ATile hi = ATile(a);
#else
    ATile hi, lo;
    SplitA(a, hi, lo);
#endif
    BTile vt;
    coopMatLoad(vt, v, qkv + dc * T, D, gl_CooperativeMatrixLayoutRowMajor);
    AccT result;
    coopMatLoad(result, qs, dc * T, D, gl_CooperativeMatrixLayoutRowMajor);
    coopMatPerElementEXT(result, result, ScaleByExpG);
    result = coopMatMulAdd(hi, vt, result);
#ifndef ACC_BF16
    result = coopMatMulAdd(lo, vt, result);
#endif
    coopMatStore(result, o, qkv + dc * T, D, gl_CooperativeMatrixLayoutRowMajor);
  }
  if (sg == NSG - 1) {
    AccT a, rows;
    coopMatLoad(a, aRaw, 0, C, gl_CooperativeMatrixLayoutRowMajor);
    coopMatPerElementEXT(a, a, DecayValue);
    coopMatReduceEXT(rows, a, gl_CooperativeMatrixReduceRowEXT, Sum);
#ifdef NV_COMPARABLE
    coopMatStore(rows, rowScratch, 0, T, gl_CooperativeMatrixLayoutRowMajor);
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    for (uint r = lane; r < C; r += gl_SubgroupSize) stats[statBase + 2 * C + r] = floatBitsToUint(rowScratch[r * T]);
#else
    for (uint i = 0; i < rows.length(); ++i) {
      const uvec2 rc = coopMatGetCoordinateEXT(rows, i);
      if (rc.y == 0) stats[statBase + 2 * C + rc.x] = floatBitsToUint(float(rows[i]));
    }
#endif
  }

  // ---- Phase 3: the state, tiles dealt unevenly to subgroups 1.. (subgroup 0 none) ----
  if (sg > 0) {
    for (uint tile = sg - 1; tile < DT * DT; tile += NSG - 1) {
      const uint dr = tile / DT, dc = tile % DT;
      ATile kRows;
      coopMatLoad(kRows, k, qkv + dr * T, D, gl_CooperativeMatrixLayoutRowMajor);
      AccT kd = AccT(kRows);  // A -> Acc
      coopMatPerElementEXT(kd, kd, DecayToEnd);
#ifdef ACC_BF16
      ATile hiT;
      coopMatTransposeEXT(hiT, kd);
#else
      ATile hiRows = ATile(kd);
      const AccT back = AccT(hiRows);
      const AccT rest = kd - back;
      ATile hiT, loT;
#ifdef NV_COMPARABLE
      AccT backT, restT;
      coopMatStore(back, transposeScratch, sg * T * T, T, gl_CooperativeMatrixLayoutColumnMajor);
      subgroupMemoryBarrierShared();
      subgroupBarrier();
      coopMatLoad(backT, transposeScratch, sg * T * T, T, gl_CooperativeMatrixLayoutRowMajor);
      subgroupBarrier();
      coopMatStore(rest, transposeScratch, sg * T * T, T, gl_CooperativeMatrixLayoutColumnMajor);
      subgroupMemoryBarrierShared();
      subgroupBarrier();
      coopMatLoad(restT, transposeScratch, sg * T * T, T, gl_CooperativeMatrixLayoutRowMajor);
      hiT = ATile(backT);
      loT = ATile(restT);
#else
      coopMatTransposeEXT(hiT, back);
      coopMatTransposeEXT(loT, rest);
#endif
#endif
      BTile vt;
      coopMatLoad(vt, v, qkv + dc * T, D, gl_CooperativeMatrixLayoutRowMajor);
      AccT st;
      coopMatLoad(st, sS, dr * T * D + dc * T, D, gl_CooperativeMatrixLayoutRowMajor);
      coopMatPerElementEXT(st, st, Times, exp(gsh[C - 1]));
      st = coopMatMulAdd(hiT, vt, st);
#ifndef ACC_BF16
      st = coopMatMulAdd(loT, vt, st);
#endif
      coopMatStore(st, sNew, state + dr * T * D + dc * T, D, gl_CooperativeMatrixLayoutRowMajor);
    }
  }

  barrier();
  for (uint i = gl_LocalInvocationIndex; i < C; i += gl_WorkGroupSize.x) stats[statBase + C + i] = masked[i];
}
