#!/usr/bin/env python3
"""A profile lists what its driver lists: every KHR cooperative matrix configuration, in the
driver's order, the saturating ones included.

  profile_lists.py <coopmat-info> <profile.txt>...

runs `coopmat-info --no-layer` (under the drm-shim that tests/amd/check_stats.py's `run`
sets up, so the real RADV or NVK enumerates for a GPU it believes it has) and compares the
one device's KHR property list with each profile's `matrix` lines. A Mesa update that adds
or drops a configuration fails here until the profiles (and their layouts) follow it."""
import re
import subprocess
import sys


def driver_list(info):
    out = subprocess.run([info, "--no-layer"], capture_output=True, text=True, check=False)
    rows = re.findall(r"^\s+M=(\d+)\s+N=(\d+)\s+K=(\d+)\s+A=(\S+)\s+B=(\S+)\s+C=(\S+)\s+Result=(\S+)\s+saturating=(\d)",
                      out.stdout, re.M)
    devices = re.findall(r"KHR properties: (\d+)", out.stdout)
    if out.returncode != 0 or len(devices) != 1 or int(devices[0]) != len(rows) or not rows:
        sys.exit(f"coopmat-info --no-layer did not list one device's configurations (exit {out.returncode}):\n"
                 + out.stdout + out.stderr)
    return [" ".join(r[:7]) + (" saturating" if r[7] == "1" else "") for r in rows]


def profile_list(path):
    return [l.split(None, 1)[1].strip() for l in open(path) if l.startswith("matrix ")]


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    driver = driver_list(sys.argv[1])
    status = 0
    for path in sys.argv[2:]:
        listed = profile_list(path)
        if listed == driver:
            print(f"{path}: the driver's {len(driver)} configurations, in its order")
            continue
        status = 1
        print(f"{path}: differs from the driver's list")
        for row in driver:
            if row not in listed:
                print(f"  the driver lists, the profile does not: {row}")
        for row in listed:
            if row not in driver:
                print(f"  the profile lists, the driver does not: {row}")
        if sorted(listed) == sorted(driver):
            print("  (the same configurations in another order)")
    return status


if __name__ == "__main__":
    sys.exit(main())
