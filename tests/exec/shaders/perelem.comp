#version 450
// coopMatPerElementEXT. OP selects the element function (CTS names in brackets):
//   0 [per_element_op]          f(r, c, x, s)    = x + s,   s = ET(2)
//   1 [per_element_op_mat]      f(r, c, x, y)    = x - y,   y = the element of a second matrix
//   2 [per_element_op_row_col]  f(r, c, x)       = x + ET(r * 3 + c)
//   3 [per_element_op_struct]   f(r, c, x, p)    = x * p.k + ET(p.add), p from push constants
//   4 (two extra operands)      f(r, c, x, s, y) = x * s + y, s from push constants
//   5 (globals)                 f(r, c, x)       = x - Y[gBase + r * C + c]: the function reads a
//                               storage buffer at an offset from a Private variable set by main()
//   6 (side effects)            f(r, c, x)       = x + ET(c), and, as kernels that scatter from
//                               the element function do, stores Bits(x) ^ 0xA5A5A5A5 to
//                               shared memory at (r, c), Bits(x) * 3 + r * 7 + c to binding 4
//                               at (r, c), and counts its calls (binding 5, atomically)
// Bindings: 0 input X, 1 input Y (both ET, row-major R x C per matrix), 2 output (ET);
// OP 6: 3 the subgroup's shared memory copied out after the operation, 4 the stores, 5
// the call count per matrix (uint each).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#ifdef NV_SPELLING  // the driver's own NV coopmat2 operations (sanity checks only)
#extension GL_NV_cooperative_matrix2 : require
#define coopMatReduceEXT coopMatReduceNV
#define coopMatPerElementEXT coopMatPerElementNV
#endif

layout(set = 0, binding = 0) readonly buffer InX { ET x_[]; };
layout(set = 0, binding = 1) readonly buffer InY { ET y_[]; };
layout(set = 0, binding = 2) writeonly buffer Out { ET out_[]; };
layout(push_constant) uniform Push { uint k; uint add; } pc;

struct Param {
  ET k;
  uint add;
};

// bfloat16 and fp8 have no arithmetic (SPV_KHR_bfloat16, SPV_EXT_float8): their element
// functions compute in float and convert the result back, as GLSL kernels on them do.
#ifdef ENCODED_TYPES
#define WT float
#else
#define WT ET
#endif
ET fScalar(const in uint32_t r, const in uint32_t c, const in ET x, const in ET s) { return ET(WT(x) + WT(s)); }
ET fMat(const in uint32_t r, const in uint32_t c, const in ET x, const in ET y) { return ET(WT(x) - WT(y)); }
ET fRowCol(const in uint32_t r, const in uint32_t c, const in ET x) { return ET(WT(x) + WT(ET(r * 3 + c))); }
ET fStruct(const in uint32_t r, const in uint32_t c, const in ET x, const in Param p) {
  return ET(WT(x) * WT(p.k) + WT(ET(p.add)));
}
uint gBase;  // Private
ET fGlobals(const in uint32_t r, const in uint32_t c, const in ET x) { return ET(WT(x) - WT(y_[gBase + r * C + c])); }
#if OP == 6
layout(set = 0, binding = 3) writeonly buffer SharedOut { uint sharedOut_[]; };
layout(set = 0, binding = 4) writeonly buffer SideOut { uint sideOut_[]; };
layout(set = 0, binding = 5) buffer Calls { uint calls_[]; };
#define SIDE_SUBGROUPS 4  // the most subgroups per workgroup the tests dispatch
shared uint sideShared[SIDE_SUBGROUPS * R * C];
uint gMatrix;  // Private
ET fSide(const in uint32_t r, const in uint32_t c, const in ET x) {
  sideShared[gl_SubgroupID * R * C + r * C + c] = Bits(x) ^ 0xA5A5A5A5u;
  sideOut_[gMatrix * R * C + r * C + c] = Bits(x) * 3u + r * 7u + c;
  atomicAdd(calls_[gMatrix], 1u);
  return ET(WT(x) + WT(ET(c)));
}
#endif
ET fMulti(const in uint32_t r, const in uint32_t c, const in ET x, const in ET s, const in ET y) {
  return ET(WT(x) * WT(s) + WT(y));
}

void main() {
  const uint base = MatrixIndex() * R * C;
  coopmat<ET, gl_ScopeSubgroup, R, C, USE> x, y, res;
  coopMatLoad(x, x_, base, C, gl_CooperativeMatrixLayoutRowMajor);
#if OP == 0
  coopMatPerElementEXT(res, x, fScalar, ET(2.0));
#elif OP == 1
  coopMatLoad(y, y_, base, C, gl_CooperativeMatrixLayoutRowMajor);
  coopMatPerElementEXT(res, x, fMat, y);
#elif OP == 2
  coopMatPerElementEXT(res, x, fRowCol);
#elif OP == 3
  const Param p = Param(ET(pc.k), pc.add);
  coopMatPerElementEXT(res, x, fStruct, p);
#elif OP == 4
  coopMatLoad(y, y_, base, C, gl_CooperativeMatrixLayoutRowMajor);
  coopMatPerElementEXT(res, x, fMulti, ET(pc.k), y);
#elif OP == 5
  gBase = base;
  coopMatPerElementEXT(res, x, fGlobals);
#elif OP == 6
  gMatrix = MatrixIndex();
  coopMatPerElementEXT(res, x, fSide);
  subgroupBarrier();  // the other invocations' stores to sideShared
  for (uint i = gl_SubgroupInvocationID; i < R * C; i += gl_SubgroupSize)
    sharedOut_[base + i] = sideShared[gl_SubgroupID * R * C + i];
#endif
  coopMatStore(res, out_, base, C, gl_CooperativeMatrixLayoutRowMajor);
}
