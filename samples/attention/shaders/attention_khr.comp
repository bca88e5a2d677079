#version 450
// The same flash-attention forward pass with VK_KHR_cooperative_matrix only — the
// way applications write it today. The two matrix products use cooperative
// matrices; everything that needs a row or a column (mask, softmax, rescale) goes
// through shared memory, where each invocation owns one row of the 8-row block:
//
//   S tile --coopMatStore--> shared --one row per invocation: scale, mask, max,
//   exp, sum--> P (f16) in shared --coopMatLoad--> A;  P · V tiles --coopMatStore-->
//   shared --> each invocation adds its row into O kept in registers (O * alpha + PV).
//
// Defines and bindings: as attention.comp.
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
#extension GL_EXT_control_flow_attributes : require

layout(local_size_x = 8) in;  // one subgroup; invocation r owns row r of the block

const uint T = 8;
const uint DT = HEAD_DIM / T;
const float kMinusInf = -1.0e30;

#define Acc coopmat<float, gl_ScopeSubgroup, T, T, gl_MatrixUseAccumulator>
#define TileA coopmat<float16_t, gl_ScopeSubgroup, T, T, gl_MatrixUseA>
#define TileB coopmat<float16_t, gl_ScopeSubgroup, T, T, gl_MatrixUseB>

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

shared float sTile[T * T];           // S, row-major
shared float16_t pTile[T * T];       // P, row-major
shared float pvTile[DT * T * T];     // P · V, one 8x8 tile per head-dimension tile

void main() {
  const uint qBlock = gl_WorkGroupID.x;
  const uint head = gl_WorkGroupID.y + gl_NumWorkGroups.y * gl_WorkGroupID.z;
  const uint base = head * pc.seqLen * HEAD_DIM;
  const uint q0 = qBlock * T;
  const uint r = gl_LocalInvocationID.x;  // the row this invocation owns

  TileA qTile[DT];
  [[unroll]] for (uint d = 0; d < DT; ++d)
    coopMatLoad(qTile[d], q, base + q0 * HEAD_DIM + d * T, HEAD_DIM, gl_CooperativeMatrixLayoutRowMajor);

  float m = kMinusInf, l = 0.0;
  float oRow[HEAD_DIM];
  [[unroll]] for (uint j = 0; j < HEAD_DIM; ++j) oRow[j] = 0.0;

  const uint blocks = pc.causal != 0 ? qBlock + 1 : pc.seqLen / T;
  for (uint kb = 0; kb < blocks; ++kb) {
    const uint c0 = kb * T;
    Acc s = Acc(0.0);
    [[unroll]] for (uint d = 0; d < DT; ++d) {
      TileB kT;
      coopMatLoad(kT, k, base + c0 * HEAD_DIM + d * T, HEAD_DIM, gl_CooperativeMatrixLayoutColumnMajor);
      s = coopMatMulAdd(qTile[d], kT, s);
    }
    coopMatStore(s, sTile, 0, T, gl_CooperativeMatrixLayoutRowMajor);
    barrier();

    // Row r: scale, mask, online softmax.
    const bool diagonal = pc.causal != 0 && kb == qBlock;
    float row[T];
    float blockMax = kMinusInf;
    [[unroll]] for (uint c = 0; c < T; ++c) {
      row[c] = (diagonal && c > r) ? kMinusInf : sTile[r * T + c] * pc.scale;
      blockMax = max(blockMax, row[c]);
    }
    const float mNew = max(m, blockMax);
    const float alpha = exp(m - mNew);
    float rowSum = 0.0;
    [[unroll]] for (uint c = 0; c < T; ++c) {
      const float p = exp(row[c] - mNew);
      rowSum += p;
      pTile[r * T + c] = float16_t(p);
    }
    l = l * alpha + rowSum;
    m = mNew;
    barrier();

    // P · V into shared, then O = O * alpha + PV row by row.
    TileA pA;
    coopMatLoad(pA, pTile, 0, T, gl_CooperativeMatrixLayoutRowMajor);
    [[unroll]] for (uint d = 0; d < DT; ++d) {
      TileB vTile;
      coopMatLoad(vTile, v, base + c0 * HEAD_DIM + d * T, HEAD_DIM, gl_CooperativeMatrixLayoutRowMajor);
      Acc pv = coopMatMulAdd(pA, vTile, Acc(0.0));
      coopMatStore(pv, pvTile, d * T * T, T, gl_CooperativeMatrixLayoutRowMajor);
    }
    barrier();
    [[unroll]] for (uint j = 0; j < HEAD_DIM; ++j) oRow[j] = oRow[j] * alpha + pvTile[(j / T) * T * T + r * T + j % T];
    barrier();
  }

  const uint row0 = base + (q0 + r) * HEAD_DIM;
  [[unroll]] for (uint j = 0; j < HEAD_DIM; ++j) o[row0 + j] = oRow[j] / l;
  lse[head * pc.seqLen + q0 + r] = m + log(l);
}
