#!/usr/bin/env python3
"""Seeds for the lower target: SPIR-V modules with word 0 (the magic number) replaced
by an option-set selector (tests/fuzz/fuzz_common.h), so that the seeds start in the
register and pipeline-time option sets, not only in the default one.

  with_selectors.py IN_DIR OUT_DIR [--cycle] SELECTOR...

Every module of IN_DIR (sorted by name) is written once per selector, or with
--cycle under one selector each, in turn. The variation bits (8-27: the random
layouts and specialization values) come from the module's position, so a fixed
input gives fixed seeds.
"""
import os
import struct
import sys


def main():
    args = sys.argv[1:]
    cycle = "--cycle" in args
    args = [a for a in args if a != "--cycle"]
    in_dir, out_dir, selectors = args[0], args[1], [int(a, 0) for a in args[2:]]
    os.makedirs(out_dir, exist_ok=True)
    written = 0
    for index, name in enumerate(sorted(os.listdir(in_dir))):
        with open(os.path.join(in_dir, name), "rb") as f:
            module = f.read()
        if len(module) < 20 or struct.unpack("<I", module[:4])[0] != 0x07230203:
            continue
        variation = (index * 2654435761 & 0xfffff) << 8
        for k, selector in enumerate(selectors):
            if cycle and k != index % len(selectors):
                continue
            with open(os.path.join(out_dir, f"{name}.{selector:08x}"), "wb") as f:
                f.write(struct.pack("<I", selector | variation) + module[4:])
            written += 1
    print(f"{written} lower seeds from {in_dir}")


if __name__ == "__main__":
    main()
