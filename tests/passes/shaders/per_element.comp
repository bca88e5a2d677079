#version 450
#extension GL_KHR_cooperative_matrix : require
#extension GL_EXT_cooperative_matrix_maintenance1 : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
#ifdef VULKAN_MM
#extension GL_KHR_memory_scope_semantics : require
#define SG gl_ScopeSubgroup
#else
#define SG 3
#endif
// GetCoordinate on A (f16), B (u8) and Accumulator (f32, s32): each invocation
// PerElementOp with a scalar extra, a matrix extra, a struct extra, and row/col use.
layout(local_size_x = 8) in;
layout(set = 0, binding = 0) buffer F32 { float f[]; };
layout(set = 0, binding = 1) buffer F16 { float16_t h[]; };
struct Params { float scale; uint offset; };
layout(push_constant) uniform PC { float s; uint off; } pc;
shared float sharedBias[8];
float addScalar(const in uint row, const in uint col, const in float x, const in float s) { return x + s; }
float addMatrix(const in uint row, const in uint col, const in float x, const in float y) { return x + 2.0 * y; }
float withStruct(const in uint row, const in uint col, const in float x, const in Params q) { return x * q.scale + float(q.offset); }
float rowCol(const in uint row, const in uint col, const in float x) { return x + float(row * 3 + col) + sharedBias[row]; }
float16_t halfOp(const in uint row, const in uint col, const in float16_t x) { return x * float16_t(2.0) + float16_t(row); }
void main() {
  sharedBias[gl_LocalInvocationIndex] = 0.0;
  barrier();
  coopmat<float, SG, 8, 8, gl_MatrixUseAccumulator> m;
  coopMatLoad(m, f, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<float, SG, 8, 8, gl_MatrixUseAccumulator> r;
  coopMatPerElementEXT(r, m, addScalar, pc.s);
  coopMatPerElementEXT(r, r, addMatrix, m);
  Params q = Params(pc.s, pc.off);
  coopMatPerElementEXT(r, r, withStruct, q);
  coopMatPerElementEXT(r, r, rowCol);
  coopMatStore(r, f, 64, 8, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<float16_t, SG, 8, 8, gl_MatrixUseA> a;
  coopMatLoad(a, h, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
  coopMatPerElementEXT(a, a, halfOp);
  coopMatStore(a, h, 64, 8, gl_CooperativeMatrixLayoutRowMajor);
}
