#!/usr/bin/env python3
"""manifest_settings_test.py MANIFEST SETTINGS_CPP README: the manifest lists every
setting the layer reads (settings.cpp's Apply) and README documents, each with its
environment variable, and the dump_dir description names the files dump.cpp writes
(review 130c39d finding 8: shader_cache_max_size was missing for vkconfig, and the
dump_dir description predated the per-pipeline variants and the .txt files)."""
import json
import re
import sys


def main(manifest_path, settings_path, readme_path):
    with open(manifest_path, encoding="utf-8") as f:
        settings = json.load(f)["layer"]["features"]["settings"]
    listed = {s["key"]: s for s in settings}
    with open(settings_path, encoding="utf-8") as f:
        read = set(re.findall(r'key == "(\w+)"', f.read()))
    with open(readme_path, encoding="utf-8") as f:
        documented = set(re.findall(r"^\| `(\w+)` \|", f.read(), re.M))
    failures = []
    for key in sorted(read - listed.keys()):
        failures.append(f"the layer reads '{key}' but the manifest does not list it")
    for key in sorted(listed.keys() - read):
        failures.append(f"the manifest lists '{key}' but the layer does not read it")
    for key in sorted(read - documented):
        failures.append(f"README's settings table lacks '{key}'")
    for key, s in sorted(listed.items()):
        env = "VK_COOPMAT_MAINTENANCE1_" + key.upper()
        if s.get("env") != env:
            failures.append(f"'{key}': env is {s.get('env')!r}, not {env!r}")
        if not s.get("description"):
            failures.append(f"'{key}' has no description")
    dump = listed.get("dump_dir", {}).get("description", "")
    for part in (".original.spv", ".lowered.spv", ".txt", ".pipeline-"):
        if part not in dump:
            failures.append(f"the dump_dir description does not name {part}")
    for failure in failures:
        print("FAIL:", failure)
    print(f"{len(listed)} settings in the manifest, {len(read)} read by the layer, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
