#!/usr/bin/env python3
"""The virtual device's profiles against the public descriptions of each driver's layouts.

Every formula below is typed from its public source, independently of the product's
built-in tables (passes/layout_builtin.cpp) and of the profiles' lines:
  * RADV GFX11/GFX12: Mesa's radv_nir_lower_cooperative_matrix.c as ../shared/reference/
    layouts.md sections 3.1 and 4.1 transcribe it;
  * NVIDIA: NVK's compiler, Mesa's nak_nir_lower_cmat.c (26.1-26.3): compute_mat, the PTX
    ISA's mma fragments generalized over every shape NVK lists, and a 16-wide B or
    accumulator as two n8 tiles one after the other, the split lower_cmat_muladd makes
    (the proprietary driver's order is not public);
  * CDNA3: AMD's matrix instruction calculator for v_mfma_f32_16x16x16_f16, element index =
    register slot (layouts.md sections 5.2, 5.3);
  * lavapipe: lvp_nir_lower_cooperative_matrix.c as measured (lavapipe.md section 3);
  * Intel ANV: brw_nir_lower_cooperative_matrix.c's load/store addressing (Mesa 24.2-26.3,
    packing factor pf = 32 / element bits; see docs/design.md).
Flexible (VK_NV_cooperative_matrix2) shapes are Mesa's split of a larger matrix into tiles
of the configuration's shape: tile t = e / tile length in row-major tile order.

  layouts_from_sources.py check <profile.txt> [coopmat-virtual-layouts]
  layouts_from_sources.py write <profile.txt> <family>

checks that every layout line of the profile is the map of the formula its "# Layouts:" line
names (the line `write` puts there) (and that the profile lays
out every configuration it lists), and, given the product's coopmat-virtual-layouts, that the
product's built-in table agrees with the formula for every key both have: the configurations
and, where the profile has flexible dimensions, every flexible shape the product's table
lists. `write` replaces the profile's layout lines with the formula's, one per configuration
type at each subgroup size (flexible shapes are the virtual device's tiles of these). A
disagreement is a finding about the product or the formula, never a reason to
regenerate one from the other. Exits 1 on any mismatch; prints what it compared."""
import re
import subprocess
import sys

TYPE_BITS = {"f16": 16, "bf16": 16, "f32": 32, "u8": 8, "s8": 8, "u32": 32, "s32": 32, "e4m3": 8, "e5m2": 8,
             "u16": 16, "s16": 16, "f64": 64, "u64": 64, "s64": 64}


def radv_gfx11(use, bits, rows, cols, size, L, e):
    if use == "A":
        return (L & 15, e)
    if use == "B":
        return (e, L & 15)
    return ((size // 16) * e + (L >> 4), L & 15)


def radv_gfx12(use, bits, rows, cols, size, L, e):
    base = 8 * (L >> 4) if size == 32 else 8 * ((L >> 4) & 1) + 4 * (L >> 5)
    if use == "A":
        return (L & 15, base + e)
    return (base + e, L & 15)


def nvidia_mma(use, bits, rows, cols, size, L, e):
    # nak_nir_lower_cmat.c compute_mat (Mesa 26.1): the PTX mma fragments, generalized. g is
    # the elements a lane holds side by side along K (4 for 8-bit A and B, else 2: 16-bit A
    # and B and every accumulator); quad = L / 4 picks the M (A, C) or N (B) coordinate,
    # L % 4 the group along K (A, B) or N (C). Element bits: e & (g - 1) within the group,
    # then for A and C "row_bound" g adds 8 to M and "col_bound" 2g adds 4g to K or N; for
    # B 2g adds 8 to N and g adds 4g to K. A 16-wide B or C is thus two n8 tiles, elements
    # of the first tile first (the split lower_cmat_muladd makes); NAK's address is
    # row * stride + col with row and col swapped for B, so B's "row" is N, its "col" K.
    q, t = L >> 2, L & 3
    g = 4 if bits == 8 and use in ("A", "B") else 2
    row_bound, col_bound = (2 * g, g) if use == "B" else (g, 2 * g)
    major = q + (8 if e & row_bound else 0)
    minor = t * g + (e & (g - 1)) + (4 * g if e & col_bound else 0)
    return (minor, major) if use == "B" else (major, minor)


def cdna3_mfma(use, bits, rows, cols, size, L, e):
    if use == "A":
        return (L & 15, 4 * (L >> 4) + e)
    return (4 * (L >> 4) + e, L & 15)  # B, and the 16x16 accumulator (i = 4 (L / 16) + GPR)


def lavapipe(use, bits, rows, cols, size, L, e):
    return (L, e) if use == "B" else (e, L)


def intel_anv(use, bits, rows, cols, size, L, e):
    pf = 32 // bits
    i, j = e // pf, e % pf
    c = cols if use == "B" else cols // pf
    row_group = i * (size // c) + L // c
    if use == "B":
        return (row_group * pf + j, L % c)
    return (row_group, (L % c) * pf + j)


# Elements per invocation of a configuration's matrix: rows x cols / size, except where a
# layout holds elements more than once (RDNA3's A and B: each 16 lanes hold the whole 16x16).
def length_of(family, use, rows, cols, size):
    if family == "radv-gfx11" and use in ("A", "B"):
        return rows * cols // 16
    return rows * cols // size


FAMILIES = {"radv-gfx11": radv_gfx11, "radv-gfx12": radv_gfx12, "nvidia-mma": nvidia_mma, "cdna-mfma": cdna3_mfma,
            "lavapipe": lavapipe, "intel-anv": intel_anv}


def fields(line):
    return dict(f.split("=", 1) for f in line.split()[1:])


def image(text):
    row = col = 0
    if text == "0":
        return (0, 0)
    for term in text.split("+"):
        bit = 1 << int(term[1:])
        if term[0] == "r":
            row ^= bit
        else:
            col ^= bit
    return (row, col)


def slots_of_line(line):
    """(L, e) -> (row, col) of a layout line, the XOR of the images of the set bits."""
    f = fields(line)
    lane = [] if f["lane"] == "-" else [image(t) for t in f["lane"].split(",")]
    index = [] if f["index"] == "-" else [image(t) for t in f["index"].split(",")]
    table = {}
    for L in range(int(f["subgroup"])):
        for e in range(int(f["length"])):
            row = col = 0
            for bit, (r, c) in enumerate(lane):
                if L >> bit & 1:
                    row, col = row ^ r, col ^ c
            for bit, (r, c) in enumerate(index):
                if e >> bit & 1:
                    row, col = row ^ r, col ^ c
            table[(L, e)] = (row, col)
    return table


def slots_of_formula(family, use, type_name, rows, cols, size, tile):
    """The formula's map for a rows x cols matrix made of tile = (tile rows, tile cols)."""
    formula = FAMILIES[family]
    tile_rows, tile_cols = tile
    bits = TYPE_BITS[type_name]
    tile_length = length_of(family, use, tile_rows, tile_cols, size)
    across = cols // tile_cols
    table = {}
    for t in range((rows // tile_rows) * across):
        for L in range(size):
            for k in range(tile_length):
                r, c = formula(use, bits, tile_rows, tile_cols, size, L, k)
                table[(L, t * tile_length + k)] = (tile_rows * (t // across) + r, tile_cols * (t % across) + c)
    return table


def key(f):
    return (f["type"], f["use"], int(f["rows"]), int(f["cols"]), int(f["subgroup"]))


def read_profile(path):
    layouts, sizes, configs, flexible = {}, [], [], 0
    for line in open(path):
        line = line.strip()
        if line.startswith("layout "):
            layouts[key(fields(line))] = line
        elif line.startswith("subgroup_sizes "):
            sizes = [int(s) for s in line.split()[1:]]
        elif line.startswith("matrix "):
            m, n, k, a, b, c, r = line.split()[1:8]
            configs.append((int(m), int(n), int(k), a, b, c, r))
        elif line.startswith("flexible_max_dimension "):
            flexible = int(line.split()[1])
    return layouts, sizes, configs, flexible


def configuration_keys(sizes, configs):
    keys = set()
    for m, n, k, a, b, c, r in configs:
        for s in sizes:
            keys |= {(a, "A", m, k, s), (b, "B", k, n, s), (c, "Acc", m, n, s), (r, "Acc", m, n, s)}
    return keys


def tile_of(k, configs):
    """The configuration shape a key is made of (itself, or the tile of a flexible shape)."""
    type_name, use, rows, cols, size = k
    for m, n, kk, a, b, c, r in configs:
        shape = {"A": (m, kk), "B": (kk, n), "Acc": (m, n)}[use]
        if type_name in ({"A": [a], "B": [b], "Acc": [c, r]}[use]) and rows % shape[0] == 0 and cols % shape[1] == 0:
            return shape
    return None


def image_text(row, col):
    terms = [f"r{b}" for b in range(16) if row >> b & 1] + [f"c{b}" for b in range(16) if col >> b & 1]
    return "+".join(terms) or "0"


def line_of_formula(family, k):
    """The layout line of a configuration key: the images of single lane and index bits."""
    type_name, use, rows, cols, size = k
    table = slots_of_formula(family, use, type_name, rows, cols, size, (rows, cols))
    length = length_of(family, use, rows, cols, size)
    origin = table[(0, 0)]
    def image(slot):
        r, c = table[slot]
        return image_text(r ^ origin[0], c ^ origin[1])
    lane = [image((1 << b, 0)) for b in range(size.bit_length() - 1)]
    index = [image((0, 1 << b)) for b in range(length.bit_length() - 1)]
    return (f"layout type={type_name} use={use} rows={rows} cols={cols} subgroup={size} length={length} "
            f"lane={','.join(lane) or '-'} index={','.join(index) or '-'}")


def write(path, family):
    _, sizes, configs, _ = read_profile(path)
    keys = sorted(configuration_keys(sizes, configs), key=lambda k: (k[4], ["A", "B", "Acc"].index(k[1]), k[0], k[2], k[3]))
    kept = [l for l in open(path).read().splitlines() if not l.startswith("layout ") and not l.startswith("# Layouts:")]
    while kept and not kept[-1].strip():
        kept.pop()
    kept.append(f"# Layouts: tests/virtual/layouts_from_sources.py write <this file> {family} (the {family} formula)")
    kept += [line_of_formula(family, k) for k in keys]
    open(path, "w").write("\n".join(kept) + "\n")


def disagreement(family, k, tile, line, what):
    """[] when `line` is the family's formula for key k (made of `tile`), else one problem naming a slot."""
    expected = slots_of_formula(family, k[1], k[0], k[2], k[3], k[4], tile)
    got = slots_of_line(line)
    if expected == got:
        return []
    bad = next(s for s in sorted(set(expected) | set(got)) if got.get(s) != expected.get(s))
    return [f"{what} the {family} formula at lane {bad[0]} element {bad[1]}: formula {expected.get(bad)}, "
            f"got {got.get(bad)}\n    {line}"]


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "write":
        return write(sys.argv[2], sys.argv[3])
    if len(sys.argv) < 3 or sys.argv[1] != "check":
        sys.exit(__doc__)
    path = sys.argv[2]
    product_tool = sys.argv[3] if len(sys.argv) > 3 else None
    named = [m.group(1) for m in (re.search(r"write <this file> (\S+)", l) for l in open(path) if l.startswith("# Layouts: ")) if m]
    if len(named) != 1 or named[0] not in FAMILIES:
        sys.exit(f"{path}: no '# Layouts: ... write <this file> <family> (the <family> formula)' line naming one of "
                 f"{', '.join(FAMILIES)}")
    family = named[0]
    layouts, sizes, configs, flexible = read_profile(path)
    problems, compared = [], 0
    wanted = configuration_keys(sizes, configs)
    for k in sorted(wanted - layouts.keys()):
        problems.append(f"the profile lays out no {' '.join(map(str, k))}")
    for k, line in sorted(layouts.items()):
        tile = (k[2], k[3]) if k in wanted else tile_of(k, configs)
        if not tile:
            problems.append(f"the profile lays out {' '.join(map(str, k))}, which is no configuration's shape nor made of one")
            continue
        compared += 1
        problems += disagreement(family, k, tile, line, "profile line disagrees with")
    product_compared = 0
    if product_tool:
        for size in sizes:
            run = subprocess.run([product_tool, family, str(size)], capture_output=True, text=True)
            if "unknown family" in run.stderr:
                break  # the product has no table of this family (it probes such devices)
            if run.returncode != 0:
                problems.append(f"{product_tool} {family} {size} failed: {run.stderr.strip()}")
                continue
            for line in run.stdout.splitlines():
                if not line.startswith("layout "):
                    continue
                k = key(fields(line))
                is_config = k in wanted
                tile = tile_of(k, configs)
                if not is_config and not (flexible and tile and k[2] <= flexible and k[3] <= flexible):
                    continue
                product_compared += 1
                problems += disagreement(family, k, (k[2], k[3]) if is_config else tile, line,
                                         f"FINDING: the product's {family} table disagrees with")
    if problems:
        sys.exit("\n".join(problems))
    print(f"{path}: {compared} layout lines equal the {family} formula", end="")
    if product_tool:
        print(f"; the product's table agrees on {product_compared} keys" if product_compared else
              f"; the product has no {family} table to compare", end="")
    print()


if __name__ == "__main__":
    main()
