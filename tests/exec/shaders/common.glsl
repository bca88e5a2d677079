// Shared prelude of the execution-test shaders. Each shader is compiled into many
// variants by tests/exec/CMakeLists.txt with -D defines:
//   ET, ET2       component types (float16_t, float, uint8_t, int8_t, uint, int; with
//                 ENCODED_TYPES also bfloat16_t, floate4m3_t, floate5m2_t)
//   USE, USE2     gl_MatrixUseA / gl_MatrixUseB / gl_MatrixUseAccumulator
//   R, C          matrix rows / columns (unless SPEC_DIMS: then spec constants 1 and 2)
//   APP_SHARED    the shader uses shared memory for its own purposes around the op
//   APP_SHARED_WORDS  how much (uint words; default 128)
//   LITERAL_LOCAL local_size_x is the literal LITERAL_LOCAL instead of spec constant 0
//   KHR_ONLY      no GL_EXT_cooperative_matrix_maintenance1 (plain KHR or NV shaders)
//   ENCODED_TYPES bfloat16_t, floate4m3_t and floate5m2_t (GL_EXT_bfloat16, GL_EXT_float_e4m3/e5m2)
// Every shader is a grid of independent subgroups: subgroup g (over the whole
// dispatch) works on matrix g of each buffer.
#extension GL_KHR_cooperative_matrix : require
#ifndef KHR_ONLY
#extension GL_EXT_cooperative_matrix_maintenance1 : require
#endif
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
#extension GL_KHR_shader_subgroup_basic : require
#ifdef ENCODED_TYPES
#extension GL_EXT_bfloat16 : require
#extension GL_EXT_float_e4m3 : require
#extension GL_EXT_float_e5m2 : require
#endif

#ifdef LITERAL_LOCAL
layout(local_size_x = LITERAL_LOCAL) in;
#else
layout(local_size_x_id = 0) in;  // LocalSizeId in SPIR-V 1.6, WorkgroupSize builtin before
#endif

#ifdef SPEC_DIMS
layout(constant_id = 1) const uint R = 8;
layout(constant_id = 2) const uint C = 8;
#endif

// Which matrix this subgroup owns.
uint MatrixIndex() { return gl_WorkGroupID.x * gl_NumSubgroups + gl_SubgroupID; }

// The bit pattern of an element, zero- or sign-extended to 32 bits.
uint Bits(float16_t x) { return uint(float16BitsToUint16(x)); }
uint Bits(float x) { return floatBitsToUint(x); }
uint Bits(uint8_t x) { return uint(x); }
uint Bits(int8_t x) { return uint(int(x)); }
uint Bits(uint x) { return x; }
uint Bits(int x) { return uint(x); }
#ifdef ENCODED_TYPES
uint Bits(bfloat16_t x) { return uint(bfloat16BitsToUintEXT(x)); }
uint Bits(floate4m3_t x) { return uint(floate4m3BitsToUintEXT(x)); }
uint Bits(floate5m2_t x) { return uint(floate5m2BitsToUintEXT(x)); }
#endif

#ifdef APP_SHARED
// Shared memory the application owns: a canary written before the matrix op and
// checked after it, so scratch memory the emulation adds must not overlap it.
#ifndef APP_SHARED_WORDS
#define APP_SHARED_WORDS 128
#endif
shared uint appCanary[APP_SHARED_WORDS];
void CanaryWrite() {
  for (uint i = gl_LocalInvocationIndex; i < APP_SHARED_WORDS; i += gl_WorkGroupSize.x) appCanary[i] = 0xC0DE0000u + i * 7u;
  barrier();
}
// Number of canary words this invocation found damaged.
uint CanaryCheck() {
  barrier();
  uint bad = 0;
  for (uint i = gl_LocalInvocationIndex; i < APP_SHARED_WORDS; i += gl_WorkGroupSize.x)
    if (appCanary[i] != 0xC0DE0000u + i * 7u) bad++;
  return bad;
}
#endif
