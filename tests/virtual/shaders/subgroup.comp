#version 450
// The subgroup operations the virtual device emulates, one result word each per
// invocation (binding 1, 16 words per invocation) from one input word per
// invocation (binding 0): built-ins, shuffles, broadcast, ballot, elect, reductions, scans.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_KHR_shader_subgroup_shuffle_relative : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_vote : require
#extension GL_KHR_shader_subgroup_clustered : require

layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer In { uint src[]; };
layout(set = 0, binding = 1) writeonly buffer Out { uint dst[]; };

void main() {
  const uint i = gl_GlobalInvocationID.x;
  const uint v = src[i];
  const float f = float(v & 255u) * 0.5;
  uint o = i * 16u;
  dst[o + 0] = gl_SubgroupSize;
  dst[o + 1] = gl_SubgroupInvocationID | (gl_SubgroupID << 8) | (gl_NumSubgroups << 16);
  dst[o + 2] = subgroupShuffle(v, (gl_SubgroupInvocationID * 5u + 3u) % gl_SubgroupSize);
  dst[o + 3] = subgroupShuffleXor(v, 5u % gl_SubgroupSize);
  dst[o + 4] = subgroupBroadcast(v, 3u);
  uvec4 ballot = subgroupBallot((v & 1u) != 0u);
  dst[o + 5] = ballot.x;
  dst[o + 6] = ballot.y;
  dst[o + 7] = subgroupElect() ? 1u : 0u;
  dst[o + 8] = subgroupAdd(v);
  dst[o + 9] = subgroupMin(v);
  dst[o + 10] = subgroupMax(v);
  dst[o + 11] = floatBitsToUint(subgroupAdd(f));
  dst[o + 12] = subgroupInclusiveAdd(v);
  dst[o + 13] = subgroupExclusiveAdd(v);
  dst[o + 14] = subgroupBallotBitCount(ballot) | (subgroupAll(v < 1000u) ? 0x100u : 0u) | (subgroupAny(v == 7u) ? 0x200u : 0u);
  const uint down = subgroupShuffleDown(v, 1u);  // undefined in the last invocation
  dst[o + 15] = subgroupClusteredAdd(v, 4u) + (gl_SubgroupInvocationID + 1u < gl_SubgroupSize ? down : 0u) * 65536u;
}
