#version 450
// Flash-attention forward pass, one 8-row block of queries per workgroup (one
// subgroup), written with GL_EXT_cooperative_matrix_maintenance1:
//
//   for every 8-column block of keys/values (up to the diagonal when causal):
//     S     = Q · K^T                       coopMatMulAdd over HEAD_DIM/8 tiles
//     S     = S * scale, masked above the diagonal     coopMatPerElementEXT(row, col)
//     mNew  = max(m, rowmax(S))             coopMatReduceEXT(Row) + per-element max
//     P     = exp(S - mNew)                 per-element op with mNew as a matrix operand
//     alpha = exp(m - mNew)
//     l     = l * alpha + rowsum(P)         coopMatReduceEXT(Row)
//     O     = O * alpha + P · V             per-element rescale, Acc -> A conversion, coopMatMulAdd
//   O /= l;  lse = m + log(l) written per row through coopMatGetCoordinateEXT
//
// m, l, alpha and the row reductions are 8x8 accumulators in which every element of
// row r holds row r's value, so they combine element-wise with S and O.
//
// Defines: HEAD_DIM (multiple of the tile edge); TILE and WARP_SIZE (below; 8 by default).
//   SUBGROUPS    query blocks per workgroup, one per subgroup (default 1). With more, the
//                workgroup stages each K and V block in shared memory for all its
//                subgroups (between workgroup barriers), and under the causal mask each
//                subgroup stops at its own diagonal while the others go on: subgroups of
//                one workgroup take different paths, as real kernels' do.
//   SPEC_TILES   the tile sizes are specialization constants, as published kernels
//                declare them: TM, TN, TK (SpecIds 3-5) and the subgroup size WARP
//                (SpecId 6, also the workgroup size). P goes from TM x TN to an A
//                matrix of TM x TK, which is only valid once TN == TK is specialized.
//   K_TRANSPOSE  load each K tile as it lies in memory (an accumulator) and turn it
//                into K^T with coopMatTransposeEXT instead of a column-major load.
//   NV_NATIVE    the same algorithm spelled with GL_NV_cooperative_matrix2 (the
//                driver's own operations); NV has no GetCoordinate, so the row
//                statistics go out through shared memory.
//
// Bindings (all [batch][head][seq][HEAD_DIM] row-major): 0 Q, 1 K, 2 V (f16),
// 3 O (f32), 4 lse (f32, [batch][head][seq]).
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#ifdef NV_NATIVE
#extension GL_NV_cooperative_matrix2 : require
#define coopMatReduceEXT coopMatReduceNV
#define coopMatPerElementEXT coopMatPerElementNV
#define gl_CooperativeMatrixReduceRowEXT gl_CooperativeMatrixReduceRowNV
#else
#extension GL_EXT_cooperative_matrix_maintenance1 : require
#endif

#ifdef SPEC_TILES
layout(local_size_x_id = 6) in;
layout(constant_id = 3) const uint TM = 8;    // query rows per block
layout(constant_id = 4) const uint TN = 8;    // keys per block, and the O/V column chunk
layout(constant_id = 5) const uint TK = 8;    // Q/K chunk of the head dimension
layout(constant_id = 6) const uint WARP = 8;  // one subgroup per workgroup
#else
// TILE: the tile edge, Br = Bc (8: lavapipe's one shape; 16: RADV, CDNA3). WARP_SIZE:
// the device's subgroup size, one subgroup per workgroup (lavapipe's is 8).
#ifndef TILE
#define TILE 8
#endif
#ifndef WARP_SIZE
#define WARP_SIZE 8
#endif
#ifndef SUBGROUPS
#define SUBGROUPS 1
#endif
layout(local_size_x = WARP_SIZE * SUBGROUPS) in;
const uint TM = TILE, TN = TILE, TK = TILE;
#endif

const uint T = TM;                 // query rows per workgroup
const uint DT = HEAD_DIM / TK;     // Q/K tiles along the head dimension
const uint DO = HEAD_DIM / TN;     // O/V tiles along the head dimension
const float kMinusInf = -1.0e30;   // finite, so exp(kMinusInf - m) is a clean 0

#define Acc coopmat<float, gl_ScopeSubgroup, TM, TN, gl_MatrixUseAccumulator>
#define TileA coopmat<float16_t, gl_ScopeSubgroup, TM, TK, gl_MatrixUseA>
#define TileB coopmat<float16_t, gl_ScopeSubgroup, TK, TN, gl_MatrixUseB>

layout(set = 0, binding = 0) readonly buffer Qbuf { float16_t q[]; };
layout(set = 0, binding = 1) readonly buffer Kbuf { float16_t k[]; };
layout(set = 0, binding = 2) readonly buffer Vbuf { float16_t v[]; };
layout(set = 0, binding = 3) writeonly buffer Obuf { float o[]; };
layout(set = 0, binding = 4) writeonly buffer Lbuf { float lse[]; };
layout(push_constant) uniform Push {
  uint seqLen;
  uint causal;
  float scale;
} pc;

// Element functions: (row, col) inside the 8x8 tile, the element, extra operands.
float ScaleAndMask(const in uint32_t row, const in uint32_t col, const in float s, const in float scale,
                   const in uint32_t diagonal) {
  return (diagonal != 0 && col > row) ? kMinusInf : s * scale;
}
float Max(const in uint32_t row, const in uint32_t col, const in float a, const in float b) { return max(a, b); }
float ExpMinus(const in uint32_t row, const in uint32_t col, const in float x, const in float m) { return exp(x - m); }
float Mul(const in uint32_t row, const in uint32_t col, const in float x, const in float f) { return x * f; }
float Div(const in uint32_t row, const in uint32_t col, const in float x, const in float f) { return x / f; }
float MulAdd(const in uint32_t row, const in uint32_t col, const in float x, const in float f, const in float add) {
  return x * f + add;
}
float LogSumExp(const in uint32_t row, const in uint32_t col, const in float m, const in float l) { return m + log(l); }
// Combine functions of the reductions.
float MaxOf(const in float a, const in float b) { return max(a, b); }
float SumOf(const in float a, const in float b) { return a + b; }

#ifdef NV_NATIVE
shared float rowStats[T * T];
#endif

#if SUBGROUPS > 1
// The key and value block every subgroup of the workgroup reads.
shared float16_t kStage[TN * HEAD_DIM];
shared float16_t vStage[TN * HEAD_DIM];
#define K_SRC kStage
#define V_SRC vStage
#define KV_BASE(c0) 0u
#else
#define K_SRC k
#define V_SRC v
#define KV_BASE(c0) (base + (c0) * HEAD_DIM)
#endif

void main() {
#if SUBGROUPS > 1
  const uint qBlock = gl_WorkGroupID.x * SUBGROUPS + gl_SubgroupID;
#else
  const uint qBlock = gl_WorkGroupID.x;
#endif
  const uint head = gl_WorkGroupID.y + gl_NumWorkGroups.y * gl_WorkGroupID.z;  // batch-major
  const uint base = head * pc.seqLen * HEAD_DIM;  // element offset of this head's Q/K/V/O
  const uint q0 = qBlock * T;

  TileA qTile[DT];
  Acc oTile[DO];
  [[unroll]] for (uint d = 0; d < DT; ++d)
    coopMatLoad(qTile[d], q, base + q0 * HEAD_DIM + d * TK, HEAD_DIM, gl_CooperativeMatrixLayoutRowMajor);
  [[unroll]] for (uint d = 0; d < DO; ++d) oTile[d] = Acc(0.0);
  Acc m = Acc(kMinusInf);  // running row max
  Acc l = Acc(0.0);        // running row sum of exp(S - m)

  const uint blocks = pc.causal != 0 ? (q0 + TM + TN - 1) / TN : pc.seqLen / TN;
#if SUBGROUPS > 1
  // Every subgroup goes round as often as the workgroup's last query block needs.
  const uint lastQ0 = (gl_WorkGroupID.x * SUBGROUPS + SUBGROUPS - 1) * T;
  const uint groupBlocks = pc.causal != 0 ? (lastQ0 + TM + TN - 1) / TN : pc.seqLen / TN;
  for (uint kb = 0; kb < groupBlocks; ++kb) {
    const uint c0 = kb * TN;
    barrier();  // every subgroup is done with the previous block
    for (uint i = gl_LocalInvocationIndex; i < TN * HEAD_DIM; i += gl_WorkGroupSize.x) {
      kStage[i] = k[base + c0 * HEAD_DIM + i];
      vStage[i] = v[base + c0 * HEAD_DIM + i];
    }
    barrier();
    if (kb >= blocks) continue;  // past this subgroup's diagonal
#else
  for (uint kb = 0; kb < blocks; ++kb) {
    const uint c0 = kb * TN;
#endif
    // S = Q · K^T
    Acc s = Acc(0.0);
    [[unroll]] for (uint d = 0; d < DT; ++d) {
      TileB kT;
#ifdef K_TRANSPOSE
      coopmat<float16_t, gl_ScopeSubgroup, TN, TK, gl_MatrixUseAccumulator> kTile;
      coopMatLoad(kTile, K_SRC, KV_BASE(c0) + d * TK, HEAD_DIM, gl_CooperativeMatrixLayoutRowMajor);
      coopMatTransposeEXT(kT, kTile);
#else
      coopMatLoad(kT, K_SRC, KV_BASE(c0) + d * TK, HEAD_DIM, gl_CooperativeMatrixLayoutColumnMajor);
#endif
      s = coopMatMulAdd(qTile[d], kT, s);
    }
    // The block on the diagonal masks col > row inside the tile (aligned tiles: TM == TN).
    coopMatPerElementEXT(s, s, ScaleAndMask, pc.scale, uint32_t(pc.causal != 0 && c0 + TN > q0 ? 1 : 0));

    // Online softmax.
    Acc blockMax, mNew, p, alpha, rowSum;
    coopMatReduceEXT(blockMax, s, gl_CooperativeMatrixReduceRowEXT, MaxOf);
    coopMatPerElementEXT(mNew, m, Max, blockMax);
    coopMatPerElementEXT(p, s, ExpMinus, mNew);
    coopMatPerElementEXT(alpha, m, ExpMinus, mNew);
    coopMatReduceEXT(rowSum, p, gl_CooperativeMatrixReduceRowEXT, SumOf);
    coopMatPerElementEXT(l, l, MulAdd, alpha, rowSum);
    m = mNew;

    // O = O * alpha + P · V (P: TM x TN keys, used as the A matrix of TM x TK)
    const TileA pA = TileA(p);
    [[unroll]] for (uint d = 0; d < DO; ++d) {
      TileB vTile;
      coopMatLoad(vTile, V_SRC, KV_BASE(c0) + d * TN, HEAD_DIM, gl_CooperativeMatrixLayoutRowMajor);
      coopMatPerElementEXT(oTile[d], oTile[d], Mul, alpha);
      oTile[d] = coopMatMulAdd(pA, vTile, oTile[d]);
    }
  }

  [[unroll]] for (uint d = 0; d < DO; ++d) {
    coopMatPerElementEXT(oTile[d], oTile[d], Div, l);
    coopMatStore(oTile[d], o, base + q0 * HEAD_DIM + d * TN, HEAD_DIM, gl_CooperativeMatrixLayoutRowMajor);
  }

  // Row statistics: every row of `stats` holds m + log(l); write column 0 of each row.
  Acc stats;
  coopMatPerElementEXT(stats, m, LogSumExp, l);
  const uint statBase = head * pc.seqLen + q0;
#ifdef NV_NATIVE
  coopMatStore(stats, rowStats, 0, T, gl_CooperativeMatrixLayoutRowMajor);
  barrier();
  const uint r = gl_LocalInvocationID.x;
  lse[statBase + r] = rowStats[r * T];
#else
  for (uint i = 0; i < stats.length(); ++i) {
    const uvec2 rc = coopMatGetCoordinateEXT(stats, i);
    if (rc.y == 0) lse[statBase + rc.x] = stats[i];
  }
#endif
}
