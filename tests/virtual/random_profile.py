#!/usr/bin/env python3
"""Writes a virtual device profile whose layouts are drawn at random: for each matrix type
a random GF(2)-linear map from (lane, index) bits onto (row, col) bits, so that the layer's
probe and register path meet layouts no driver has (images that mix rows and columns,
replication on any lane bits, a subgroup size of 16, 32 or 64).

  random_profile.py <out.txt> [<subgroup size>]

A size given fixes the subgroup size (16: lavapipe's own subgroups of 16, several to a workgroup,
which no fixed profile has); the layouts are still drawn.

The seed is COOPMAT_VIRTUAL_PROFILE_SEED when set (scripts/virtual-campaign draws one per
round), else made from the commit under test and the output's name (exec_tally.lane_seed), so
a CI run is reproducible from its commit and the next commit draws another profile; with no
commit known, drawn. It is printed, and written into the profile, so a failing run can be
drawn again."""
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "exec"))
from exec_tally import lane_seed, source_commit  # noqa: E402

TYPES = {"A": ["f16", "u8", "s8"], "B": ["f16", "u8", "s8"], "Acc": ["f16", "f32", "u32", "s32"]}
CONFIGS = ["f16 f16 f32 f32", "f16 f16 f16 f16", "u8 u8 u32 u32", "s8 s8 s32 s32"]
# bfloat16 and fp8 A and B with f32 accumulators, as RADV GFX12 lists them; drawn after
# the types above, so that a seed draws those as before. On this device's identity the
# layer's default costs move their values in registers (RADV's prefer the round trip),
# so the encoded types' register exchanges run here.
ENCODED_TYPES = {"A": ["bf16", "e4m3", "e5m2"], "B": ["bf16", "e4m3", "e5m2"]}
ENCODED_CONFIGS = ["bf16 bf16 f32 f32", "e4m3 e4m3 f32 f32", "e5m2 e5m2 f32 f32"]
ROWS = COLS = 16
COORD_BITS = ["r0", "r1", "r2", "r3", "c0", "c1", "c2", "c3"]  # bit i of the image mask


def rank(vectors):
    basis = []
    for v in vectors:
        for b in basis:
            v = min(v, v ^ b)
        if v:
            basis.append(v)
    return len(basis)


def image_text(mask):
    return "+".join(name for i, name in enumerate(COORD_BITS) if mask >> i & 1) or "0"


def random_layout(rng, type_name, use, size):
    lane_bits = size.bit_length() - 1
    coord_bits = len(COORD_BITS)
    # Replicated lane bits (images 0), as long as an invocation holds at most 16 elements,
    # as drivers do (lavapipe compiles the register code of longer ones for seconds).
    replicas = min(rng.choice([0, 0, 1, 1, 2]), lane_bits - 4)
    index_bits = coord_bits - (lane_bits - replicas)
    # A random invertible map: the non-replica lane bits and the index bits get the
    # images of a random basis of the 8 coordinate bits: single bits in a random order
    # (as drivers' layouts are), then a few of them XORed into others.
    images = [1 << bit for bit in rng.sample(range(coord_bits), coord_bits)]
    for _ in range(rng.choice([0, 0, 1, 2, 4])):
        i, j = rng.sample(range(coord_bits), 2)
        images[i] ^= images[j]
    assert rank(images) == coord_bits
    live_lanes = sorted(rng.sample(range(lane_bits), lane_bits - replicas))
    lane, index = ["0"] * lane_bits, []
    for k, position in enumerate(live_lanes):
        lane[position] = image_text(images[k])
    for k in range(index_bits):
        index.append(image_text(images[len(live_lanes) + k]))
    return (f"layout type={type_name} use={use} rows={ROWS} cols={COLS} subgroup={size} length={1 << index_bits} "
            f"lane={','.join(lane) or '-'} index={','.join(index) or '-'}")


def main():
    out = sys.argv[1]
    commit = source_commit()
    seed = int(os.environ.get("COOPMAT_VIRTUAL_PROFILE_SEED") or
               (lane_seed("random-profile:" + os.path.basename(out) + ":" + ",".join(sys.argv[2:]), commit) or 1
                if commit else random.randrange(1, 2**31)))
    rng = random.Random(seed)
    size = rng.choice([16, 32, 64])  # 8 lanes would hold 32 elements each (the lavapipe profile has 8)
    if len(sys.argv) > 2:
        size = int(sys.argv[2])
    lines = [
        f"# Drawn by random_profile.py with seed {seed} (COOPMAT_VIRTUAL_PROFILE_SEED={seed} draws it again).",
        "name random-gf2",
        "vendor_id 0x1af4",
        "device_id 0x00f2",
        "device_name Virtual GF(2) device",
        "device_type discrete",
        "driver_id 10",
        "driver_name virtual-gf2",
        "driver_info random layouts",
        "driver_version 1.0.0",
        f"subgroup_sizes {size}",
        f"default_subgroup_size {size}",
        "shared_memory 65536",
    ]
    lines += [f"matrix {ROWS} {COLS} {ROWS} {config}" for config in CONFIGS + ENCODED_CONFIGS]
    for table in (TYPES, ENCODED_TYPES):
        for use, types in table.items():
            for type_name in types:
                lines.append(random_layout(rng, type_name, use, size))
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"random profile: subgroup size {size}, seed {seed} (COOPMAT_VIRTUAL_PROFILE_SEED={seed} draws it again) -> {out}")
    print("\n".join(l for l in lines if l.startswith("layout ")))


if __name__ == "__main__":
    main()
