#version 450
#extension GL_KHR_cooperative_matrix : require
#extension GL_EXT_cooperative_matrix_maintenance1 : require
#ifdef VULKAN_MM
#extension GL_KHR_memory_scope_semantics : require
#define SG gl_ScopeSubgroup
#else
#define SG 3
#endif
// Maintenance1 operations in loops that spirv-opt -O turns into loop-header code
// (review finding 10): a do-while becomes a single-block loop whose header holds
// the PerElementOp; the for(;;) body's Reduce sits in the block after the header.
layout(local_size_x = 8) in;
layout(set = 0, binding = 0) buffer F32 { float f[]; };
layout(push_constant) uniform PC { float s; uint n; } pc;
float addScalar(const in uint row, const in uint col, const in float x, const in float s) { return x + s + float(row); }
float sumF(const in float a, const in float b) { return a + b; }
void main() {
  coopmat<float, SG, 16, 16, gl_MatrixUseAccumulator> m;
  coopMatLoad(m, f, 0, 16, gl_CooperativeMatrixLayoutRowMajor);
  uint i = 0;
  do {
    coopMatPerElementEXT(m, m, addScalar, pc.s);
    ++i;
  } while (i < pc.n);
  coopmat<float, SG, 16, 16, gl_MatrixUseAccumulator> r;
  uint j = 0;
  for (;;) {
    coopMatReduceEXT(r, m, gl_CooperativeMatrixReduceRowEXT, sumF);
    m = r;
    ++j;
    if (j >= pc.n) break;
  }
  coopMatStore(m, f, 256, 16, gl_CooperativeMatrixLayoutRowMajor);
}
