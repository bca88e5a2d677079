#version 450
// A shuffle in divergent control flow (docs/design.md, "Faults"): each half of the
// subgroup names, in a branch of its own, a lane of the other half. SPIR-V leaves the
// result undefined (the lane named is not active at that instruction): the virtual device
// must give poison, and where the halves are different chunks, report a fault. With
// UNIFORM the same exchange is one shuffle every lane reaches: defined, no fault.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require

layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer In { uint src[]; };
layout(set = 0, binding = 1) writeonly buffer Out { uint dst[]; };

void main() {
  const uint i = gl_GlobalInvocationID.x, l = gl_SubgroupInvocationID, h = gl_SubgroupSize / 2u;
  const uint v = src[i];
  uint r;
#ifdef UNIFORM
  r = subgroupShuffle(v, l ^ h);
#else
  if (l < h)
    r = subgroupShuffle(v, l + h);
  else
    r = subgroupShuffle(v, l - h);
#endif
  dst[i] = r;
}
