#!/usr/bin/env python3
"""Print the markdown rule table of docs/l2.md from the `rule!` declarations in
validate/src/l2 (run from the repository root)."""
import glob
import os
import re

rows = []
for p in sorted(glob.glob("validate/src/l2/**/*.rs", recursive=True)):
    if p.endswith("rule.rs"):
        continue
    s = open(p).read()
    pat = r'rule!\(\s*(\w+),\s*"([^"]+)",\s*(\w+),\s*(public|project) "((?:[^"\\]|\\.)*)",\s*"((?:[^"\\]|\\.)*)"\s*\);'
    for m in re.finditer(pat, s):
        _, name, gate, kind, src, what = m.groups()
        rows.append((os.path.relpath(p, "validate/src/l2"), name, gate, kind, src.replace('\\"', '"'), what.replace('\\"', '"')))
codes = {"Format": "934 / 1000 / 999", "Engine": "935 / 1084 / 1083", "Length": "—", "DmaFence": "—", "SpSecondPath": "2083"}
esc = lambda t: t.replace("|", "\\|")
print("| Rule | Code (v4 / v3 / v2) | What it checks | Source | File |")
print("|---|---|---|---|---|")
for f, name, gate, kind, src, what in rows:
    s = src if kind == "public" else "**project-defined**: " + src
    print("| `%s` | %s | %s | %s | `%s` |" % (name, codes[gate], esc(what), esc(s), f))
