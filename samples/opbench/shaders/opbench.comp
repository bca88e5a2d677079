#version 450
// One cooperative-matrix operation between a load and a store. Each workgroup is
// one subgroup working on its own matrix: load source matrix g (row-major R x C),
// apply OP, store result matrix g (row-major R2 x C2).
//
//   ET USE R C      source component type, use, shape
//   ET2 USE2 R2 C2  result component type, use, shape
//   OP   0 load + store only (the baseline; the result is the source)
//        1 GetCoordinate: m[i] = Elem(row, col, m[i]) over m.length() (NV has no
//          GetCoordinate: its way spells the same computation coopMatPerElementNV)
//        2 PerElementOp with Elem
//        3 Reduce with MASK (1 row, 2 column, 3 row and column, 4 2x2), combine = sum
//        4 conversion (constructor; ConvertUse or Op*Convert)
//        5 transposing conversion (coopMatTransposeEXT / coopMatTransposeNV)
//   WAY_EXT  GL_EXT_cooperative_matrix_maintenance1 (through the layer on lavapipe)
//   WAY_NV   GL_NV_cooperative_matrix2, the driver's own implementation
//   WAY_KHR  KHR only: the store-to-shared workaround apps use today
//   SAME_TYPE  ET and ET2 are the same type (the workaround skips a pass)
//   ENCODED  ET or ET2 is bfloat16 or fp8 (Elem and Sum compute in f32)
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
#ifdef ENCODED
// bfloat16 / fp8 cases (layer way only): these types have no arithmetic, so the
// element and combine functions compute in f32 and convert back.
#extension GL_EXT_bfloat16 : require
#extension GL_EXT_float_e4m3 : require
#extension GL_EXT_float_e5m2 : require
#endif
#if defined(WAY_EXT)
#extension GL_EXT_cooperative_matrix_maintenance1 : require
#elif defined(WAY_NV)
#extension GL_NV_cooperative_matrix2 : require
#define coopMatPerElementEXT coopMatPerElementNV
#define coopMatReduceEXT coopMatReduceNV
#define coopMatTransposeEXT coopMatTransposeNV
#endif

layout(local_size_x = 8) in;  // one subgroup (lavapipe's subgroup size is 8) by default;
layout(local_size_x_id = 0) in;  // opbench --stats specializes it to the required subgroup size

layout(set = 0, binding = 0) readonly buffer Src { ET src[]; };
layout(set = 0, binding = 1) writeonly buffer Dst { ET2 dst[]; };

#define Source coopmat<ET, gl_ScopeSubgroup, R, C, USE>
#define Result coopmat<ET2, gl_ScopeSubgroup, R2, C2, USE2>

// The element function of OP 1 and 2, and the reduction's combine function.
#ifdef ENCODED
ET Elem(const in uint32_t row, const in uint32_t col, const in ET x) { return ET(float(x) * 2.0 + float((row * 3 + col) & 7)); }
ET Sum(const in ET a, const in ET b) { return ET(float(a) + float(b)); }
#else
ET Elem(const in uint32_t row, const in uint32_t col, const in ET x) { return x * ET(2) + ET((row * 3 + col) & 7); }
ET Sum(const in ET a, const in ET b) { return a + b; }
#endif

#ifdef WAY_KHR
shared ET stage[R * C];
shared ET2 result[R2 * C2];
#if OP == 3 && MASK == 3
shared ET rowSums[R];
#endif
#define lane gl_LocalInvocationID.x
#define lanes gl_WorkGroupSize.x
#endif

void main() {
  const uint g = gl_WorkGroupID.x;
  Source m;
  coopMatLoad(m, src, g * R * C, C, gl_CooperativeMatrixLayoutRowMajor);
  Result res;

#if OP == 0
  res = m;

#elif defined(WAY_KHR) && (OP == 1 || OP == 2)
  // Workaround: the element's row and column are its place in shared memory.
  coopMatStore(m, stage, 0, C, gl_CooperativeMatrixLayoutRowMajor);
  barrier();
  for (uint i = lane; i < R * C; i += lanes) stage[i] = Elem(i / C, i % C, stage[i]);
  barrier();
  coopMatLoad(res, stage, 0, C, gl_CooperativeMatrixLayoutRowMajor);

#elif OP == 1 && defined(WAY_NV)
  coopMatPerElementEXT(res, m, Elem);

#elif OP == 1
  for (uint i = 0; i < m.length(); ++i) {
    const uvec2 rc = coopMatGetCoordinateEXT(m, i);
    m[i] = Elem(rc.x, rc.y, m[i]);
  }
  res = m;

#elif OP == 2
  coopMatPerElementEXT(res, m, Elem);

#elif OP == 3 && defined(WAY_KHR)
  // Workaround: reduce in shared memory, one row / column / output per invocation.
  coopMatStore(m, stage, 0, C, gl_CooperativeMatrixLayoutRowMajor);
  barrier();
#if MASK == 1
  for (uint r = lane; r < R; r += lanes) {
    ET s = ET(0);
    for (uint c = 0; c < C; ++c) s += stage[r * C + c];
    for (uint c = 0; c < C2; ++c) result[r * C2 + c] = s;
  }
#elif MASK == 2
  for (uint c = lane; c < C; c += lanes) {
    ET s = ET(0);
    for (uint r = 0; r < R; ++r) s += stage[r * C + c];
    for (uint r = 0; r < R2; ++r) result[r * C2 + c] = s;
  }
#elif MASK == 3
  // Row sums first, one row per invocation; then every invocation adds those up.
  for (uint r = lane; r < R; r += lanes) {
    ET s = ET(0);
    for (uint c = 0; c < C; ++c) s += stage[r * C + c];
    rowSums[r] = s;
  }
  barrier();
  ET s = ET(0);
  for (uint r = 0; r < R; ++r) s += rowSums[r];
  for (uint i = lane; i < R2 * C2; i += lanes) result[i] = s;
#elif MASK == 4
  for (uint i = lane; i < R2 * C2; i += lanes) {
    const uint r = 2 * (i / C2), c = 2 * (i % C2);
    result[i] = stage[r * C + c] + stage[r * C + c + 1] + stage[(r + 1) * C + c] + stage[(r + 1) * C + c + 1];
  }
#endif
  barrier();
  coopMatLoad(res, result, 0, C2, gl_CooperativeMatrixLayoutRowMajor);

#elif OP == 3
  coopMatReduceEXT(res, m, MASK, Sum);

#elif (OP == 4 || OP == 5) && defined(WAY_KHR)
  // Workaround: store, convert the component type in shared memory when it changes,
  // load with the new use; a column-major load does the transpose.
#if OP == 5
  const int resultLayout = gl_CooperativeMatrixLayoutColumnMajor;
#else
  const int resultLayout = gl_CooperativeMatrixLayoutRowMajor;
#endif
  coopMatStore(m, stage, 0, C, gl_CooperativeMatrixLayoutRowMajor);
  barrier();
#ifdef SAME_TYPE
  coopMatLoad(res, stage, 0, C, resultLayout);
#else
  for (uint i = lane; i < R * C; i += lanes) result[i] = ET2(stage[i]);
  barrier();
  coopMatLoad(res, result, 0, C, resultLayout);
#endif

#elif OP == 4
  res = Result(m);

#elif OP == 5
  coopMatTransposeEXT(res, m);
#endif

  coopMatStore(res, dst, g * R2 * C2, C2, gl_CooperativeMatrixLayoutRowMajor);
}
