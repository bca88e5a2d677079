#version 450
// A real-class kernel: every subgroup solves its own lower-triangular system L x = b by
// forward substitution, lane i holding row i, with a shuffle in a loop whose trip count
// is the subgroup's own system size (n = 4 (id + 1), at most 16 and the subgroup size);
// then it builds X (x[r] * (c + 1)) with a per-element operation that reads x from its
// subgroup's part of shared memory, sums X's columns (coopMatReduceEXT) and writes its
// diagonal through coopMatGetCoordinateEXT. One elected invocation per subgroup counts
// the subgroups that got there.
//
// Spec constant 0: the workgroup size (NSG subgroups). Bindings, per subgroup g over the
// dispatch: 0 L ([g][16][16] f32, row-major), 1 b ([g][16]), 2 x out ([g][16]), 3 column
// sums out ([g][16][16]: every row the column sums), 4 diagonal out ([g][16]), 5 counter (uint).
#extension GL_KHR_cooperative_matrix : require
#extension GL_EXT_cooperative_matrix_maintenance1 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_EXT_shader_explicit_arithmetic_types : require

layout(local_size_x_id = 0) in;
const uint N = 16;
#define AccT coopmat<float, gl_ScopeSubgroup, N, N, gl_MatrixUseAccumulator>

layout(set = 0, binding = 0) readonly buffer Lb { float l[]; };
layout(set = 0, binding = 1) readonly buffer Bb { float b[]; };
layout(set = 0, binding = 2) writeonly buffer Xb { float x[]; };
layout(set = 0, binding = 3) writeonly buffer Sums { float sums[]; };
layout(set = 0, binding = 4) writeonly buffer Diag { float diag[]; };
layout(set = 0, binding = 5) buffer Count { uint counter[]; };

#ifdef NV_COMPARABLE
// Without GetCoordinate (no NV spelling): the diagonal through a buffer round trip, so
// that the module can be respelled NV (scripts/measure/kernel_vs_radv.py).
layout(set = 0, binding = 6) buffer Scratch { float scratch[]; };
#endif
shared float xs[64 * N];  // each subgroup's solution (at most 64 subgroups of the workgroup)

float FromSolution(const in uint32_t row, const in uint32_t col, const in float unused, const in uint32_t sg) {
  return xs[sg * N + row] * float(col + 1);
}
float Sum(const in float a, const in float c) { return a + c; }

void main() {
  const uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
  const uint system = gl_WorkGroupID.x * gl_NumSubgroups + sg;
  const uint n = min(4 * (sg + 1), min(gl_SubgroupSize, N));
  const uint row = system * N * N + lane * N;
  float acc = 0.0, xi = 0.0;
  for (uint j = 0; j < n; ++j) {
    if (lane == j) xi = (b[system * N + lane] - acc) / l[row + lane];
    const float xj = subgroupShuffle(xi, j);
    if (lane > j && lane < n) acc += l[row + j] * xj;
  }
  // Rows past n are 0 (subgroups of 8 lanes write the 16 rows in two turns).
  for (uint r = lane; r < N; r += gl_SubgroupSize) {
    const float solved = r == lane && r < n ? xi : 0.0;
    x[system * N + r] = solved;
    xs[sg * N + r] = solved;
  }
  subgroupMemoryBarrierShared();
  subgroupBarrier();

  AccT m = AccT(0.0);
  coopMatPerElementEXT(m, m, FromSolution, sg);
  AccT columns;
  coopMatReduceEXT(columns, m, gl_CooperativeMatrixReduceColumnEXT, Sum);
  coopMatStore(columns, sums, system * N * N, N, gl_CooperativeMatrixLayoutRowMajor);
#ifdef NV_COMPARABLE
  coopMatStore(m, scratch, system * N * N, N, gl_CooperativeMatrixLayoutRowMajor);
  subgroupMemoryBarrierBuffer();
  subgroupBarrier();
  for (uint r = lane; r < N; r += gl_SubgroupSize) diag[system * N + r] = scratch[system * N * N + r * N + r];
#else
  for (uint i = 0; i < m.length(); ++i) {
    const uvec2 rc = coopMatGetCoordinateEXT(m, i);
    if (rc.x == rc.y) diag[system * N + rc.x] = m[i];
  }
#endif
  if (subgroupElect()) atomicAdd(counter[0], 1u);
}
