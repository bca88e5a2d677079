#version 450
// A Row reduce and a per-element op on an 8x8 f32 accumulator: both have a register
// lowering when the driver's layout is known.
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_cooperative_matrix_maintenance1 : require
layout(local_size_x = 8) in;
layout(set = 0, binding = 0) buffer Data { float m[64]; float sums[64]; } data;
float Add(const in float a, const in float b) { return a + b; }
float Scale(const in uint row, const in uint col, const in float x) { return x * float(row + 1) + float(col); }
void main() {
  coopmat<float, gl_ScopeSubgroup, 8, 8, gl_MatrixUseAccumulator> C, R;
  coopMatLoad(C, data.m, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
  coopMatPerElementEXT(C, C, Scale);
  coopMatReduceEXT(R, C, gl_CooperativeMatrixReduceRowEXT, Add);
  coopMatStore(R, data.sums, 0, 8, gl_CooperativeMatrixLayoutRowMajor);
}
