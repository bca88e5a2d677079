// Register or scratch, per driver family: the choices the measurements made.
//
// RADV (ACO), AMD compile lane (tests/amd, docs/performance.md, "AMD"), 16x16,
// instructions / inverse throughput of the whole opbench kernel:
//   Convert Acc f32 -> A f16, navi31 wave32: register move 686 / 684, scratch round
//   trip 62 / 81, RADV's own NV lowering 135 / 170; transposes Acc -> B likewise
//   (555-707 in registers against 86-95 for the workaround). On gfx1201: 405 (wave32)
//   and 108 (wave64) against 41-49. ACO lowers each OpGroupNonUniformShuffle of a
//   moved element to a ds_bpermute or v_permlane pair with its own index math, so a
//   gather of 8-16 elements per lane costs far more than one LDS store and load.
//   Reductions keep their shuffles: there each step is a single DPP/permlane
//   combine, at RADV's own cost. 16-bit moves that are an exchange between two
//   lanes (GFX11 wave32 Acc -> B and transposes to A) take registers on every
//   family whatever this choice (lower_convert_use.cpp, MovePlan): packed pairs,
//   one v_permlanex16 per two elements, 65 / 82 against RADV's own 71 / 82.
// lavapipe: register moves are at parity with its native NV conversions (opbench,
//   docs/performance.md) and cheaper than the round trip: the default.
#include "coopmat/lower.h"

namespace coopmat {

void ApplyMeasuredCosts(DriverFamily family, LowerOptions& options) {
  switch (family) {
    case DriverFamily::RadvGfx11:
    case DriverFamily::RadvGfx12:
      options.registerMovesWithShuffles = false;
      // An XOR shuffle within a row of 16 lanes is a DPP operand of the select that
      // consumes it (v_cndmask_b32_dpp quad_perm / row_xmask / row_ror): free.
      options.foldedShuffleLaneBits = 0xF;
      // Register moves as exchanges (ExchangePlan) against the round trip, 16x16,
      // ACO's instructions / inverse throughput, exchanges against the round trip
      // (scripts/measure/amd_tables.py under lowering=registers, and as shipped):
      //   plan cost 12 (GFX11 w32 Acc f16 -> B): 67 / 82 against 82 / 84
      //   plan cost 14 (GFX12 w64 Acc f16 -> A; 16 with 65 / 54 before its lane swap
      //     of bits 2 and 5 was two exchanges): 56 / 49 against 41 / 46
      //   plan cost 18 (GFX11 w64 Acc f16 -> B): 75 / 45 against 71 / 44
      //   plan cost 20 (GFX12 w32 Acc f16 -> A): 68 / 91 against 49 / 90
      //   plan cost 30-32 (GFX11 Acc f16 -> A): 101 / 97 and 94 / 71 against 60 / 81 and 50 / 41
      // (RADV's own NV lowering of these: 67-145 / 66-185, above every exchange plan's
      // inverse throughput.) In a whole kernel the wave32 moves past 12 cost more than
      // alone: the GLA chunk at D = 32 on navi31 wave32 (its A -> Acc moves) is
      // 1812 / 2681 with them against 2162 / 855 through the round trip
      // (scripts/measure/kernel_vs_radv.py). The round trip wins past these costs;
      // where its scratch would cost occupancy the budget takes exchanges anyway
      // (lower.cpp), and lowering=registers takes them everywhere.
      // scripts/measure/round_trip_costs.py measures every conversion and transpose both
      // ways and prints the thresholds that route them with the least regret (wave32 18-19,
      // wave64 0-13 at this writing: at wave32 the 8-bit moves planned at 18, navi31's Acc s32
      // -> B s8 and transpose Acc u32 -> A u8, win in registers, 90 / 84 and 76 / 83 against
      // 116 / 93 and 99 / 93); the lane's amd.round_trip_costs keeps these in them.
      options.roundTripCost = {{32, 18}, {64, 13}};
      // RADV runs compute in WGP mode: the WGP's 128 KiB of LDS is shared by the
      // workgroups resident on it (a workgroup may use up to 64 KiB).
      options.sharedMemoryPool = 128 * 1024;
      // ... in blocks of 1024 bytes on RDNA2 and later (ACO reports the GLA chunk's
      // 21632 bytes at D = 64 as 22528): with 2048 bytes of round-trip scratch it
      // keeps its 5 workgroups per WGP, which exact bytes would have counted as 6 -> 5.
      options.sharedMemoryGranule = 1024;
      break;
    case DriverFamily::NvidiaMma:
      // NAK (NVK compile lane, Ampere, tests/nvk): a gather with shuffles costs 229-239
      // instructions against 60-131 for the round trip (f16 Acc -> B, transposes to A);
      // GetCoordinate, PerElementOp and the reductions are at or below the workaround.
      // Exchanges (ExchangePlan; a shfl per word sent, no folding): f16 Acc -> B,
      // plan cost 24: 88 instructions / 505 static cycles against 66 / 422 for the
      // round trip; transposes to A likewise (84-98 against 62-80; Ampere and Turing,
      // scripts/measure/round_trip_costs.py: any threshold up to 23 routes them so).
      options.registerMovesWithShuffles = false;
      options.roundTripCost = {{32, 16}};
      break;
    case DriverFamily::Lavapipe:
    case DriverFamily::CdnaMfma: break;
  }
}

}  // namespace coopmat
