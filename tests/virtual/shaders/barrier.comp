#version 450
// Workgroup memory written by one lane and read by another of the same subgroup (review
// dbb465e #3): without a barrier between them the read is a race, which the virtual device
// shows only where the reader's chunk runs before the writer's (8-lane chunks make 16- and
// 32-lane subgroups chunks too: COOPMAT_VIRTUAL_CHUNK_LANES). With BARRIER, defined. With
// MEET_FIRST the race follows a subgroup barrier, where the chunks' order is drawn anew
// (COOPMAT_VIRTUAL_CHUNK_ORDER), rather than the entry.
#extension GL_KHR_shader_subgroup_basic : require

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint X = 8;
layout(set = 0, binding = 0) readonly buffer In { uint src[]; };
layout(set = 0, binding = 1) writeonly buffer Out { uint dst[]; };
shared uint s[256];

void main() {
  const uint i = gl_GlobalInvocationID.x, l = gl_LocalInvocationIndex;
#ifdef MEET_FIRST
  subgroupBarrier();
#endif
  s[l] = src[i];
#ifdef BARRIER
  subgroupMemoryBarrierShared();
  subgroupBarrier();
#endif
  dst[i] = s[(l & ~(gl_SubgroupSize - 1u)) | ((l % gl_SubgroupSize) ^ X)];
}
