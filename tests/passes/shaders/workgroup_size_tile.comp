#version 450
// Review 4b565b7 finding 10: shapes and a Use computed from gl_WorkGroupSize, which
// glslang writes as OpSpecConstantOp CompositeExtract %gl_WorkGroupSize 0 (then
// UDiv, and IAdd 0 for the int). With local_size_x_id = 32: TM = 8, USE = B. Each
// subgroup transposes its TM x 8 f32 Accumulator (row-major at its slot of `src`)
// into an 8 x TM f16 B matrix stored row-major at the same slot of `dst`.
#extension GL_KHR_cooperative_matrix : require
#extension GL_EXT_cooperative_matrix_maintenance1 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
#extension GL_KHR_shader_subgroup_basic : require
layout(local_size_x_id = 0) in;
const uint TM = gl_WorkGroupSize.x / 4u;
const int USE = int(gl_WorkGroupSize.x / 32u);
layout(set = 0, binding = 0) readonly buffer In { float src[]; };
layout(set = 0, binding = 1) writeonly buffer Out { float16_t dst[]; };
void main() {
  const uint base = (gl_WorkGroupID.x * gl_NumSubgroups + gl_SubgroupID) * TM * 8u;
  coopmat<float, gl_ScopeSubgroup, TM, 8, gl_MatrixUseAccumulator> m;
  coopMatLoad(m, src, base, 8, gl_CooperativeMatrixLayoutRowMajor);
  coopmat<float16_t, gl_ScopeSubgroup, 8, TM, USE> t;
  coopMatTransposeEXT(t, m);
  coopMatStore(t, dst, base, TM, gl_CooperativeMatrixLayoutRowMajor);
}
