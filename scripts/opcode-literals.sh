#!/bin/sh
# Count raw opcode literals and catch-all arms over opcodes in the code that gives opcodes
# their meaning (the simulator's dispatch and ops, the lifter and its lowering).
#
#   scripts/opcode-literals.sh          totals per file and overall
#
# A raw opcode literal: a two-digit hex literal (0xNN) outside comments, string literals and
# `#[cfg(test)]` code whose value is an opcode byte of isa/spec/opcodes.rs. Two counts:
# - "bound": every such literal, an upper bound (a mask 0x0F, an ALU op 0x04 or a dtype 0x0A
#   counts too);
# - "in opcode context": those on a line that names `opcode`, or inside a `match` over an
#   opcode (its scrutinee names `opcode` or the bundle's byte 0, `.0[0]`).
# A catch-all over opcodes: a `_ =>` arm of a `match` whose scrutinee names `opcode` or
# the bundle's byte 0 (`.0[0]`).
set -eu
cd "$(dirname "$0")/.."
exec python3 - "$@" <<'PY'
import glob, re, sys

spec = open("isa/spec/opcodes.rs").read()
codes = {int(m, 16) for m in re.findall(r"(?:\br|\bps|OpcodeRow::new)\((0x[0-9A-Fa-f]{2}),", spec)}

files = sorted(
    set(glob.glob("sim/src/machine/*.rs"))
    | set(glob.glob("sim/src/machine/ops/*.rs"))
    | set(glob.glob("validate/src/lift/*.rs"))
)
files = [f for f in files if not re.search(r"(^|/)tests?(\.rs|/)|_tests\.rs$", f)]

def strip(src):
    """Source with comments and string/char literals blanked (newlines kept)."""
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i)); i = j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2); j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", src[i:j])); i = j
        elif c == "r" and re.match(r'r#*"', src[i:i + 10]) and not (i and (src[i-1].isalnum() or src[i-1] == "_")):
            h = re.match(r'r(#*)"', src[i:]).group(1)
            j = src.find('"' + h, i + 2 + len(h)); j = n if j < 0 else j + 1 + len(h)
            out.append(re.sub(r"[^\n]", " ", src[i:j])); i = j
        elif c == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            out.append(re.sub(r"[^\n]", " ", src[i:j + 1])); i = j + 1
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", src[i:i + 4]):
            m = re.match(r"'(\\.|[^\\'])'", src[i:i + 4]); out.append(" " * len(m.group(0))); i += len(m.group(0))
        else:
            out.append(c); i += 1
    return "".join(out)

def cfg_test_cut(src):
    """Drop everything from the first `#[cfg(test)]` (unit-test modules sit at the end)."""
    k = src.find("#[cfg(test)]")
    return src if k < 0 else src[:k]

tot_lit = tot_ctx = tot_all = 0
for f in files:
    s = cfg_test_cut(strip(open(f).read()))
    lits = [m for m in re.finditer(r"\b0x([0-9A-Fa-f]{2})\b", s) if int(m.group(1), 16) in codes]
    catch, spans, catch_at = 0, [], []
    for m in re.finditer(r"\bmatch\b([^{;]*)\{", s):
        if not re.search(r"opcode|\.0\[0\]", m.group(1)):
            continue
        depth, j = 1, m.end()
        while j < len(s) and depth:
            if s[j] == "{": depth += 1
            elif s[j] == "}": depth -= 1
            elif depth == 1 and re.match(r"_\s*=>", s[j:j + 6]) and not (s[j-1].isalnum() or s[j-1] == "_"):
                catch += 1
                catch_at.append(s.count(chr(10), 0, j) + 1)
            j += 1
        spans.append((m.start(), j))
    def in_context(m):
        a = s.rfind("\n", 0, m.start()) + 1
        b = s.find("\n", m.end())
        return "opcode" in s[a:b] or any(x <= m.start() < y for x, y in spans)
    ctx = [m for m in lits if in_context(m)]
    if lits or catch:
        where = ", ".join(f"{s.count(chr(10), 0, m.start()) + 1}" for m in ctx)
        print(f"{f}: {len(lits)} bound, {len(ctx)} in opcode context{' (lines ' + where + ')' if ctx else ''}, {catch} catch-all(s){' (lines ' + ', '.join(map(str, catch_at)) + ')' if catch_at else ''}")
    tot_lit += len(lits); tot_ctx += len(ctx); tot_all += catch
print(f"total over {len(files)} files: {tot_lit} raw opcode literal(s) (bound), {tot_ctx} in opcode context, {tot_all} catch-all arm(s) over opcodes")
PY
