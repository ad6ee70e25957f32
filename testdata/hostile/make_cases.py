#!/usr/bin/env python3
"""Write the hostile-input regression corpus: one directory per group, each holding small input
files and a `cases.json` that `cli/tests/it/hostile_inputs.rs` runs.

Every case is an object

    {"name": "...", "args": ["run", "{case}/k.neff", "--out-dir", "{out}"],
     "stdin": "file in the group dir (fed through a pipe), or a device path" (optional),
     "env": {"NAME": "value"} (optional),
     "setup": [{"op": "symlink"|"fifo"|"sparse"|"mkdir"|"file"|"asm"|"repeat", "path": "...", ...}] (optional),
     "exit": 2, "stderr": "a substring of the named error",
     "exists": ["paths that must exist afterwards"] (optional),
     "absent": ["paths that must not exist afterwards"] (optional)}

(`asm` assembles the text "from" for "arch" into "path" with `sim asm`; `repeat` writes "text"
"count" times into "path") with the placeholders {case} (the group directory), {out} (a fresh, empty output directory)
and {scratch} (a fresh directory for set-up files). The harness runs every case under a 4 GiB
address-space limit and checks the exit code, the message, that nothing panicked or aborted,
that no file appeared outside {out} and {scratch}, and that no temporary file was left.
Other groups may be added as further `*/cases.json` files; the harness globs them all.

Only the Python standard library is used. Large inputs are never stored: they are sparse files
made by the harness (`setup`), /dev/zero, or sizes declared in def.json.

    python3 testdata/hostile/make_cases.py
"""

import copy
import gzip
import json
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "neff"))
import independent_writer as iw  # noqa: E402  (stdlib-only NEFF building blocks)

P, F = iw.P, iw.F


def write(group, name, data):
    path = os.path.join(HERE, group, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(path + ".tmp", "wb") as f:
        f.write(data)
    os.replace(path + ".tmp", path)


js = iw.js


def neff(members, payload=None):
    """A NEFF (pkg_version 2) of `members`; `payload` replaces the gzip tar when given."""
    if payload is None:
        payload = gzip.compress(iw.tar_bytes(members), compresslevel=9, mtime=0)
    return iw.header(payload, b"hostile") + payload


def branch(rel):
    """CompareBranch, always taken, to the bundle `rel` bundles away (REL_IMM)."""
    b = iw.bundle(0xA9)
    b[13] = 0x08
    b[14] = 3
    struct.pack_into("<q", b, 48, rel * 64)
    return bytes(b)


def reshaped_tt(steps, nums):
    """The kernel's TensorTensor add with every operand given `steps` and `nums`."""
    b = bytearray(iw.tensor_tensor_add())
    for off in (16, 32, 48):
        struct.pack_into("<hhh", b, off + 4, *steps)
        struct.pack_into("<HHH", b, off + 10, *nums)
    return bytes(b)


def kernel():
    """The add_square kernel of independent_writer.py as (def.json, SP.json, members)."""
    return iw.kernel_parts(iw.lcg_values(1, P * F), iw.lcg_values(2, P * F))


def variant(edit=None, sp_edit=None, extra=None):
    d, sp, members = kernel()
    if edit:
        edit(d)
    if sp_edit:
        sp_edit(sp)
    members["sg00/def.json"] = js(d)
    members["sg00/SP.json"] = js(sp)
    members.update(extra or {})
    return neff(members)


def out_var(d):
    return next(v for v in d["var"] if v["name"] == "out")


def rename_out(name):
    def edit(d):
        out_var(d)["name"] = name
        # The DMA names variables by name: keep the store pointing at the output.
    return edit


def add_var(**v):
    def edit(d):
        d["var"].append(v)
    return edit


CASES = {}


def case(group, name, args, exit, stderr, **kw):
    c = {"name": name, "args": args, "exit": exit, "stderr": stderr}
    c.update(kw)
    CASES.setdefault(group, []).append(c)


# ------------------------------------------------------------------ run: outputs and budgets

def run_group():
    g = "run"
    write(g, "ok.neff", variant())
    # 1. output names that would leave the output directory
    for fname, vname in [("out_dotdot.neff", "../escaped"), ("out_abs.neff", "/tmp/tpbsim-hostile-escaped"),
                         ("out_slash.neff", "sub/escaped"), ("out_dot.neff", "..")]:
        def sp_edit(sp, vname=vname):
            sp["dma"][1]["desc"][0]["to"] = vname
        write(g, fname, variant(rename_out(vname), sp_edit))
        for cmd in ["run", "check", "profile"]:
            case(g, f"{cmd}: output named {vname!r}", [cmd, "{case}/" + fname, "--out-dir", "{out}/o"],
                 2, "cannot be an output file name", absent=["{out}/escaped.npy", "/tmp/tpbsim-hostile-escaped.npy"])
    # 2./3. sizes that cannot be allocated
    big = lambda name, size, shape, dtype="uint8": add_var(var_id=9, name=name, type="tmp-buf", size=size, dtype=dtype, shape=shape)
    write(g, "var_2p63.neff", variant(big("big", 1 << 63, [1 << 63])))
    case(g, "variable of 2^63 bytes", ["run", "{case}/var_2p63.neff", "--out-dir", "{out}"], 3,
         "budget fault: set-up: memory budget exceeded: variable `big` needs 9223372036854775808 bytes")
    write(g, "var_2p40.neff", variant(big("big", 1 << 40, [1 << 40])))
    case(g, "variable of 2^40 bytes", ["run", "{case}/var_2p40.neff", "--out-dir", "{out}"], 3,
         "memory budget exceeded: variable `big` needs 1099511627776 bytes")
    write(g, "var_131072sq.neff", variant(big("big", 131072 * 131072 * 4, [131072, 131072], "float32")))
    case(g, "variable of shape [131072, 131072]", ["check", "{case}/var_131072sq.neff"], 3,
         "memory budget exceeded: variable `big` needs 68719476736 bytes")

    def many_outputs(d):
        for i in range(64):
            d["var"].append(dict(var_id=100 + i, name=f"o{i}", type="output", size=1 << 30, dtype="float32", shape=[1 << 28]))
    write(g, "outputs_64x1GiB.neff", variant(many_outputs))
    case(g, "64 outputs of 1 GiB", ["run", "{case}/outputs_64x1GiB.neff", "--out-dir", "{out}"], 3,
         "memory budget exceeded: variable `o2` needs 1073741824 bytes")
    case(g, "64 outputs of 1 GiB, smaller budget", ["run", "{case}/outputs_64x1GiB.neff", "--out-dir", "{out}", "--max-memory", "100M"], 3,
         "memory budget exceeded: variable `o0`")

    # 3. DMA entries of huge counts with zero steps
    def zero_steps(n0, n1):
        def sp_edit(sp):
            e = sp["dma"][0]["desc"][0]
            e.update({"from_sizes": [n0, n1], "from_steps": [0, 0], "to_sizes": [n0, n1], "to_steps": [0, 0]})
        return sp_edit
    write(g, "dma_65535sq.neff", variant(sp_edit=zero_steps(65535, 65535)))
    case(g, "DMA [65535, 65535] with zero steps", ["run", "{case}/dma_65535sq.neff", "--out-dir", "{out}"], 3,
         "step budget of 100000000 steps exhausted")
    write(g, "dma_65535x16384.neff", variant(sp_edit=zero_steps(65535, 16384)))
    case(g, "DMA [65535, 16384], DMA budget", ["run", "{case}/dma_65535x16384.neff", "--out-dir", "{out}", "--max-dma-bytes", "1G"], 3,
         "DMA budget exceeded: `in[0].desc[0]` needs 4294901760 bytes")
    case(g, "DMA [65535, 16384], step budget", ["run", "{case}/dma_65535x16384.neff", "--out-dir", "{out}", "--max-steps", "1000000"], 3,
         "step budget of 1000000 steps exhausted")

    # 2./3. engine ops with huge access patterns (validation off: the machine must still refuse)
    write(g, "tt_huge.neff", variant(extra={"sg00/dve_instr": reshaped_tt((0, 0, 0), (65535, 65535, 65535))}))
    case(g, "TensorTensor num=65535^3 step 0", ["run", "{case}/tt_huge.neff", "--no-validate", "--out-dir", "{out}"], 3,
         "budget fault: dve bundle #0 (opcode 0x41, byte offset 0x0): memory budget exceeded: operand `")
    # The same through a MEMSET that the L2 validator accepts (validation on).
    def memset(nums):
        b = iw.bundle(0x49)
        b[32] = iw.FP32
        b[34] = P
        struct.pack_into("<hhhh", b, 48, 0, 0, 0, 0)
        struct.pack_into("<HHHH", b, 56, *nums)
        return bytes(b)
    for nums, label in [((65535,) * 4, "65535^4"), ((65535, 65535, 1, 1), "65535,65535,1,1")]:
        fname = "memset_" + label.replace("^", "p").replace(",", "_") + ".neff"
        write(g, fname, variant(extra={"sg00/dve_instr": memset(nums)}))
        for cmd in ["run", "check", "profile"]:
            case(g, f"{cmd}: MEMSET dst num={label} step 0 (L2-valid)", [cmd, "{case}/" + fname, "--out-dir", "{out}"], 3,
                 "budget fault: dve bundle #0 (opcode 0x49, byte offset 0x0): memory budget exceeded: operand `dst`")
    # 3./4. runaway loops, traced and profiled
    write(g, "runaway.neff", variant(extra={"sg00/Activation.bin": branch(0)}))
    case(g, "runaway loop, traced: trace up to the fault", ["run", "{case}/runaway.neff", "--max-steps", "20000", "--trace", "{out}/t.json", "--out-dir", "{out}/o"], 3,
         "step budget of 20000 steps exhausted", exists=["{out}/t.json"], absent=["{out}/o/out.npy"])
    case(g, "runaway loop, profiled under a memory budget", ["profile", "{case}/runaway.neff", "--max-memory", "64M"], 3,
         "memory budget exceeded: the timeline")
    case(g, "runaway loop, traced under a memory budget", ["run", "{case}/runaway.neff", "--max-memory", "64M", "--trace", "{out}/t.json", "--out-dir", "{out}/o"], 3,
         "memory budget exceeded: the timeline", exists=["{out}/t.json"])
    # A loop releasing a semaphore on every pass: the race check's records are budgeted too.
    sync_loop = bytearray(branch(0))
    sync_loop[6], sync_loop[7] = 0x13, 5  # SEM_INC_COMPLETE semaphore 5
    write(g, "sync_loop.neff", variant(extra={"sg00/Activation.bin": bytes(sync_loop)}))
    case(g, "semaphore loop under the race check", ["check", "{case}/sync_loop.neff", "--max-memory", "40M"], 3,
         "memory budget exceeded: the race check's records")
    # 12. one DMA writing every other byte of a 64 MiB variable: the race check's shadow memory
    # (a segment per byte written) is charged as the update creates it
    def strided_def(d):
        d["var"].append(dict(var_id=9, name="src", type="tmp-buf", size=1 << 25, dtype="uint8", shape=[1 << 25]))
        d["var"].append(dict(var_id=10, name="big", type="tmp-buf", size=1 << 26, dtype="uint8", shape=[1 << 26]))
        d["dma_queue"].append({"name": "strided"})

    def strided_sp(sp):
        sp["dma"].append({"queue": "strided", "id": 0, "desc": [{
            "from": "src", "to": "big", "from_sizes": [1 << 25], "to_sizes": [1 << 25],
            "from_steps": [1], "to_steps": [2]}]})
    write(g, "dma_every_other_byte.neff", variant(strided_def, strided_sp, {"sg00/SP.bin": iw.dma_trigger("strided", 0)}))
    # (the default budget stops it too, after some 15 million segments: too slow for the corpus)
    case(g, "DMA writing every other byte of 64 MiB under the race check",
         ["check", "{case}/dma_every_other_byte.neff", "--max-memory", "1G"], 3,
         "memory budget exceeded: the race check's shadow memory (")
    # 4. a two-bundle loop moving 512 KiB per trigger: DMA bytes count against the step budget
    def loop_sp(sp):
        sp["dma"].append({"queue": "big", "id": 0, "desc": [{
            "from": "x", "to": "out", "from_sizes": [131072], "to_sizes": [131072],
            "from_steps": [0], "to_steps": [0]}]})

    def loop_def(d):
        d["dma_queue"].append({"name": "big"})
    write(g, "dma_loop.neff", variant(loop_def, loop_sp, {"sg00/SP.bin": iw.dma_trigger("big", 0) + branch(-1)}))
    case(g, "two-bundle loop moving 512 KiB per pass", ["run", "{case}/dma_loop.neff", "--max-steps", "500000", "--out-dir", "{out}"], 3,
         "step budget of 500000 steps exhausted")
    # 11. a loop of one TensorTensor: its operand bytes are work on the step budget, so the
    # budget bounds the time, not only the bundles
    big_tt = reshaped_tt((1, 0, 0), (16384, 1, 1))
    write(g, "tt_loop.neff", variant(extra={"sg00/dve_instr": big_tt + branch(-1)}))
    case(g, "a loop of one TensorTensor", ["run", "{case}/tt_loop.neff", "--max-steps", "1000000", "--out-dir", "{out}"], 3,
         "steps of work (one per 64 bytes a DMA moves or an engine operand spans); engines at: dve bundle #0")
    # 7. targets checked before the simulation
    case(g, "--trace names a directory", ["run", "{case}/ok.neff", "--trace", "{out}", "--out-dir", "{out}/o"], 2,
         "a directory; only regular files are replaced", absent=["{out}/o/out.npy", "{out}/o"])
    case(g, "--trace names a FIFO", ["run", "{case}/ok.neff", "--trace", "{scratch}/t.fifo", "--out-dir", "{out}"], 2,
         "a FIFO; only regular files are replaced", setup=[{"op": "fifo", "path": "{scratch}/t.fifo"}], absent=["{out}/out.npy"])
    case(g, "--trace names a device", ["run", "{case}/ok.neff", "--trace", "/dev/null", "--out-dir", "{out}"], 2,
         "/dev/null: a device; only regular files are replaced", absent=["{out}/out.npy"])
    case(g, "output target is a symbolic link", ["run", "{case}/ok.neff", "--out-dir", "{out}"], 2,
         "a symbolic link; only regular files are replaced",
         setup=[{"op": "symlink", "path": "{out}/out.npy", "to": "{scratch}/victim"}], absent=["{scratch}/victim"])
    case(g, "--out-dir names a file", ["run", "{case}/ok.neff", "--out-dir", "{scratch}/f"], 2,
         "the output directory is not a directory", setup=[{"op": "file", "path": "{scratch}/f"}])
    # 5. silent passes of the run
    def misspell(d):
        out_var(d)["type"] = "Output"
    write(g, "type_misspelled.neff", variant(misspell))
    case(g, "output type misspelled", ["run", "{case}/type_misspelled.neff", "--out-dir", "{out}"], 2,
         "variable `out`: unknown type `Output`")
    write(g, "ref_no_out/tolerance.json", js({"default": {"ulp": 0}}))
    case(g, "--ref-dir without the output's file", ["run", "{case}/ok.neff", "--ref-dir", "{case}/ref_no_out", "--out-dir", "{out}"], 2,
         "no reference for output `out`", absent=["{out}/out.npy"])
    write(g, "ref_bad_tolerance/out.npy", iw.npy("<f4", [P, F], bytes(P * F * 4)))
    write(g, "ref_bad_tolerance/tolerance.json", js({"default": {"ulps": 1}}))
    case(g, "tolerance.json with an unknown key", ["run", "{case}/ok.neff", "--ref-dir", "{case}/ref_bad_tolerance", "--out-dir", "{out}"], 2,
         "unknown field `ulps`")
    write(g, "ref_bad_output/out.npy", iw.npy("<f4", [P, F], bytes(P * F * 4)))
    write(g, "ref_bad_output/tolerance.json", js({"outputs": {"outt": {"ulp": 1}}}))
    case(g, "tolerance.json naming no output", ["run", "{case}/ok.neff", "--ref-dir", "{case}/ref_bad_output", "--out-dir", "{out}"], 2,
         "`outputs` names `outt`, which is not an output of the kernel")
    # 8. unbounded reads
    case(g, "--input from /dev/zero", ["run", "{case}/ok.neff", "--input", "x=/dev/zero", "--out-dir", "{out}"], 2,
         "/dev/zero: bad .npy header: missing \\x93NUMPY magic")
    # 9. misleading errors
    def zzz(d):
        pass
    write(g, "arch_zzz.neff", variant(extra={"neff.json": js({"target_arch": "zzz"})}))
    case(g, "unknown target_arch", ["run", "{case}/arch_zzz.neff", "--out-dir", "{out}"], 2,
         "neff.json target_arch: unknown target `zzz`")

    def no_member(d):
        next(v for v in d["var"] if v["name"] == "x")["file_name"] = "nope.npy"
    write(g, "missing_file_name.neff", variant(no_member))
    case(g, "file_name names a missing member", ["run", "{case}/missing_file_name.neff", "--out-dir", "{out}"], 2,
         "missing member `sg00/nope.npy` (named by sg00/def.json var[1].file_name)")
    # 10. on-chip DMA addresses with bits above the 29-bit on-chip address: refused, not
    # folded onto address 0
    for hi in (0x20000000, 0xE0000000):
        def sp_hi(sp, hi=hi):
            sp["dma"][0]["desc"][0]["to_offset"] += hi
        fname = f"dma_to_sbuf_0x{hi:08x}.neff"
        write(g, fname, variant(sp_edit=sp_hi))
        for cmd in ["run", "check"]:
            case(g, f"{cmd}: DMA into SBUF at 0x{hi:08x}", [cmd, "{case}/" + fname, "--out-dir", "{out}"], 3,
                 f"access at 0x{hi:08x}: address bits 29..31 set", absent=["{out}/out.npy"])
    # 11. an output of 22,000 dimensions (its .npy header would be over 64 KiB of text)
    def many_dims(d):
        out_var(d)["shape"] = [P, F] + [1] * 22000
    write(g, "out_22000_dims.neff", variant(many_dims))
    for cmd in ["run", "check", "profile"]:
        case(g, f"{cmd}: output of 22,000 dimensions", [cmd, "{case}/out_22000_dims.neff", "--out-dir", "{out}"], 2,
             "output `out` has a shape of 22002 dimensions", absent=["{out}/out.npy"])
    case(g, "control: the kernel runs", ["run", "{case}/ok.neff", "--out-dir", "{out}"], 0, "",
         exists=["{out}/out.npy"])


# ------------------------------------------------------------------ files, streams, text

def io_group():
    g = "io"
    write(g, "odd/PE.bin", bytes(100))
    case(g, "100-byte stream through a pipe", ["validate", "--arch", "v3", "--engine", "pe", "/dev/stdin"], 2,
         "/dev/stdin: 100 bytes is not a multiple of 64", stdin="odd/PE.bin")
    case(g, "100-byte stream through a FIFO named PE.bin", ["verify", "--arch", "v3", "{scratch}/PE.bin"], 2,
         "PE.bin: 100 bytes is not a multiple of 64", stdin="odd/PE.bin",
         setup=[{"op": "symlink", "path": "{scratch}/PE.bin", "to": "/dev/stdin"}])
    case(g, "validate names a directory", ["validate", "--arch", "v3", "{case}/odd"], 2,
         "is a directory, not a stream file")
    write(g, "one/PE.bin", bytes(64))
    case(g, "--threads beyond the machine", ["validate", "--arch", "v3", "--threads", "100000", "{case}/one/PE.bin"], 2,
         "pass --force-threads")
    case(g, "--threads forced beyond the cap", ["validate", "--arch", "v3", "--threads", "100000", "--force-threads", "{case}/one/PE.bin"], 2,
         "more than 1024 (the forced maximum)")
    case(g, "convert reading /dev/zero", ["convert", "--from", "bfloat16", "--to", "float32"], 2,
         "reading standard input: more than 268435456 bytes", stdin="/dev/zero")
    write(g, "nul.s", "NOP\n\0NOP\n")
    case(g, "assembly with a NUL byte", ["asm", "{case}/nul.s", "--arch", "v3", "-o", "{out}/o.bin"], 2,
         "nul.s:2: a NUL byte (byte offset 4)", absent=["{out}/o.bin"])
    write(g, "nop.s", "")
    case(g, "asm output through a symbolic link", ["asm", "{case}/nop.s", "--arch", "v3", "-o", "{scratch}/link"], 2,
         "a symbolic link; only regular files are replaced",
         setup=[{"op": "symlink", "path": "{scratch}/link", "to": "{scratch}/victim"}], absent=["{scratch}/victim"])
    case(g, "lift output to a device", ["lift", "{case}/one/PE.bin", "--arch", "v3", "-o", "/dev/null"], 2,
         "/dev/null: a device; only regular files are replaced")
    case(g, "lift output to a device, explicitly allowed", ["lift", "{case}/one/PE.bin", "--arch", "v3", "-o", "/dev/null"], 0,
         "lifted into 1 instruction(s)", env={"TPBSIM_WRITE_SPECIAL": "1"})
    # fp32 literals: beyond the range refused, infinity only when written
    tsa = ("TENSOR_SCALAR_ARITH_OP src=fp32@0x0[1,1,1][256,1,1] dst=fp32@0x800[1,1,1][256,1,1] "
           "num_active_partitions=128 op0=MULT imm0={} op1=ADD imm1=0.0;\n")
    for fname, lit in [("imm_1e39.s", "1e39"), ("imm_1e99999.s", "1e99999"), ("imm_neg_1e39.s", "-1e39")]:
        write(g, fname, tsa.format(lit))
        case(g, f"asm: imm0={lit}", ["asm", "{case}/" + fname, "--arch", "v3", "-o", "{out}/o.bin"], 2,
             f"`{lit}` is beyond the fp32 range", absent=["{out}/o.bin"])
    write(g, "imm_inf.s", tsa.format("-inf"))
    case(g, "asm: imm0=-inf written", ["asm", "{case}/imm_inf.s", "--arch", "v3", "-o", "{out}/o.bin"], 0, "",
         exists=["{out}/o.bin"])
    # bundles that can only fail at run time are refused where they are written
    tr = "TENSOR_REDUCE_ARITH_OP src=fp32@0x0[1,1,1,1][256,1,1,1] dst=fp32@0x800[1,1,1,1][1,1,1,1] op=ADD{};\n"
    write(g, "reduce_no_op_dim.s", tr.format(" num_active_channels=128"))
    write(g, "reduce_no_channels.s", tr.format(" op_dim=X"))
    write(g, "reduce_ok.s", tr.format(" num_active_channels=128 op_dim=X"))
    for fname, why in [("reduce_no_op_dim.s", "is_valid_s4d4_tr.reduce_op_dim"),
                       ("reduce_no_channels.s", "is_valid_s4d4_tr.num_active_channels")]:
        case(g, f"asm --deny-warnings: {fname}", ["asm", "{case}/" + fname, "--arch", "v3", "--deny-warnings", "-o", "{out}/POOL.bin"], 2,
             why, absent=["{out}/POOL.bin"])
        case(g, f"asm --deny-warnings, engine unnamed: {fname}", ["asm", "{case}/" + fname, "--arch", "v3", "--deny-warnings", "-o", "{out}/o.bin"], 2,
             "the L2 validator rejects 1 bundle(s)", absent=["{out}/o.bin"])
    case(g, "asm: the complete reduce passes", ["asm", "{case}/reduce_ok.s", "--arch", "v3", "--deny-warnings", "-o", "{out}/POOL.bin"], 0, "",
         exists=["{out}/POOL.bin"])
    case(g, "validate: a reduce without op_dim", ["validate", "--arch", "v3", "--engine", "pool", "{scratch}/r.bin"], 1,
         "pool 1 bundle(s): 1 invalid",
         setup=[{"op": "asm", "path": "{scratch}/r.bin", "from": "{case}/reduce_no_op_dim.s", "arch": "v3"}])
    # 3,000 ACTIVATEs reading their bias (pointer mode) from what the last one writes: the
    # pointer-unwritten lint answers each read by a search, not a scan of every write
    n = 3000
    act = ("ACTIVATE src=[0x0 step=1,1,1 num=1,1,1] in_bias_dtypes=FP32|FP32 out_dtype=FP32 "
           "num_active_partitions=128 activation_func=IDENTITY scale_value=1.0 bias={bias:#x} "
           "dst=[{dst:#x} step=1,1,1 num=1,1,1];\n")
    write(g, "act_3000_pointer_bias.s", "".join(act.format(bias=4 * (n - 1), dst=4 * i) for i in range(n)))
    case(g, "asm: 3,000 ACTIVATEs with pointer biases", ["asm", "{case}/act_3000_pointer_bias.s", "--arch", "v3", "--deny-warnings", "-o", "{out}/ACT.bin"], 0, "",
         exists=["{out}/ACT.bin"])
    # BIR JSON
    write(g, "dup.bir.json", '{"arch": 40, "arch": 30, "functions": []}\n')
    case(g, "BIR JSON duplicate key", ["verify", "{case}/dup.bir.json"], 2, "duplicate key \"arch\" in one object")

    def nested(regions):
        inner = {"op": "Loop", "blocks": []}
        for _ in range(regions - 1):
            inner = {"op": "Loop", "blocks": [{"name": "b", "instructions": [inner]}]}
        return json.dumps({"arch": 40, "functions": [{"name": "f", "blocks": [{"name": "b", "instructions": [inner]}]}]})
    write(g, "regions64.bir.json", nested(64))
    write(g, "regions65.bir.json", nested(65))
    case(g, "BIR JSON 64 nested regions (the documented limit)", ["verify", "{case}/regions64.bir.json"], 0, "")
    case(g, "BIR JSON 65 nested regions", ["verify", "{case}/regions65.bir.json"], 2, "regions nested deeper than 64")
    write(g, "brackets.bir.json", "[" * 5000)
    case(g, "BIR JSON nested 5000 levels", ["verify", "{case}/brackets.bir.json"], 2, "nested deeper than 296 levels")
    case(g, "BIR JSON from /dev/zero", ["verify", "{scratch}/z.bir.json"], 2, "z.bir.json: more than 134217728 bytes",
         setup=[{"op": "symlink", "path": "{scratch}/z.bir.json", "to": "/dev/zero"}])


# ------------------------------------------------------------------ NEFF container

def neff_group():
    g = "neff"
    d, sp, members = kernel()
    members["sg00/def.json"] = js(d)
    members["sg00/SP.json"] = js(sp)
    payload = gzip.compress(iw.tar_bytes(members), mtime=0) + gzip.compress(b"a second member", mtime=0)
    write(g, "two_gzip_members.neff", neff(None, payload))
    case(g, "gzip member after the first", ["neff", "info", "{case}/two_gzip_members.neff"], 2,
         "(a second gzip member or trailing data; one member is read)")
    case(g, "gzip member after the first (run)", ["run", "{case}/two_gzip_members.neff", "--out-dir", "{out}"], 2,
         "a second gzip member or trailing data")
    # A shipped .asm member of 60 million lines: the cross-check assembles no more of it than
    # the stream beside it holds.
    d, sp, members = kernel()
    members["sg00/def.json"] = js(d)
    members["sg00/SP.json"] = js(sp)
    members["sg00/SP.asm"] = b"NOP\n" * 60_000_000
    write(g, "asm_60M_lines.neff", neff(members))
    case(g, "neff info: a .asm member of 60M lines", ["neff", "info", "{case}/asm_60M_lines.neff"], 0, "")
    # A member name carrying a terminal escape sequence: refused, and shown escaped.
    d, sp, members = kernel()
    members["sg00/def.json"] = js(d)
    members["sg00/SP.json"] = js(sp)
    members["sg00/\x1b[2J\x1b[31mred.bin"] = b"x"
    write(g, "escape_in_member_name.neff", neff(members))
    for cmd in [["neff", "info"], ["validate"], ["run"]]:
        case(g, f"{' '.join(cmd)}: a member name with terminal escapes", cmd + ["{case}/escape_in_member_name.neff"], 2,
             "unsafe member path `sg00/\\u{1b}[2J\\u{1b}[31mred.bin`")
    # A missing file is named once.
    for cmd in [["run"], ["validate"], ["neff", "info"], ["lift"]]:
        case(g, f"{' '.join(cmd)}: a missing NEFF", cmd + ["{scratch}/nope.neff"], 2,
             "sim: error: {scratch}/nope.neff: No such file or directory")
    deep = {"neff.json": b"{}\n", "sg00/" + "a/" * 3000 + "z.bin": b""}
    write(g, "deep_path.neff", neff(deep))
    case(g, "unpack: member 6 KB deep", ["neff", "unpack", "{case}/deep_path.neff", "-o", "{out}/u"], 2,
         "cannot be unpacked", absent=["{out}/u/neff.json"])
    six = {f"m{i}.bin": bytes([i]) * 16 for i in range(1, 7)}
    write(g, "six.neff", neff(six))
    case(g, "unpack: a later member fails, earlier ones removed", ["neff", "unpack", "{case}/six.neff", "-o", "{out}/u", "--force"], 2,
         "m6.bin: a directory; only regular files are replaced",
         setup=[{"op": "mkdir", "path": "{out}/u/m6.bin"}],
         absent=[f"{{out}}/u/m{i}.bin" for i in range(1, 6)])
    case(g, "unpack into a fresh directory: nothing left on failure", ["neff", "unpack", "{case}/six.neff", "-o", "{out}/v/w"], 0, "",
         exists=["{out}/v/w/m6.bin"])
    case(g, "pack: a 2 GiB member refused before it is read", ["neff", "pack", "{scratch}/pk", "-o", "{out}/p.neff", "--no-validate"], 2,
         "is 2147483648 bytes", setup=[{"op": "sparse", "path": "{scratch}/pk/big.bin", "size": 2 << 30}], absent=["{out}/p.neff"])


# ------------------------------------------------------------------ memory per bundle

def memory_group():
    g = "memory"
    # A 190 KB NEFF of 1M TensorTensor bundles: lifting and verifying it need more than the
    # default 3 GiB budget at their per-bundle charge; refused before anything is lifted.
    d, sp, members = kernel()
    members["sg00/def.json"] = js(d)
    members["sg00/SP.json"] = js(sp)
    members["sg00/dve_instr"] = iw.tensor_tensor_add() * 1_000_000
    write(g, "tt_1M.neff", neff(members))
    case(g, "lift: a NEFF of 1M bundles", ["lift", "{case}/tt_1M.neff", "-o", "{out}/k.bir.json"], 2,
         "tt_1M.neff: memory budget exceeded: lifting 1000003 bundle(s) (5120 bytes a bundle) needs 5120015360 bytes",
         absent=["{out}/k.bir.json"])
    case(g, "verify: a NEFF of 1M bundles", ["verify", "{case}/tt_1M.neff"], 2,
         "memory budget exceeded: verifying 1000003 bundle(s) (5120 bytes a bundle, 20480 more for each of the 0 the L2 validator rejects)")
    # A 64 MiB sparse stream of 1M zero bundles, every one rejected by L2: charged for its findings.
    zeros = [{"op": "sparse", "path": "{scratch}/PE.bin", "size": 64 << 20}]
    case(g, "verify: 1M bundles L2 rejects, under 16 GiB", ["verify", "--arch", "v3", "--max-memory", "16G", "{scratch}/PE.bin"], 2,
         "verifying 1048576 bundle(s) (5120 bytes a bundle, 20480 more for each of the 1048576 the L2 validator rejects) needs 26843545600 bytes",
         setup=zeros)
    # The charge is per bundle: one bundle fits 5 KiB exactly, not one byte less.
    case(g, "lift: one bundle in a 5 KiB budget", ["lift", "--arch", "v3", "{case}/../io/one/PE.bin", "--max-memory", "5K", "-o", "{out}/o.json"], 0,
         "lifted into 1 instruction(s)", exists=["{out}/o.json"])
    case(g, "lift: one bundle in 5119 bytes", ["lift", "--arch", "v3", "{case}/../io/one/PE.bin", "--max-memory", "5119", "-o", "{out}/o.json"], 2,
         "lifting 1 bundle(s) (5120 bytes a bundle) needs 5120 bytes, 0 of the 5119-byte budget",
         absent=["{out}/o.json"])
    # 16 MiB of NOP lines (4M bundles, 256 MiB of output) under a 64 MiB budget: the text and
    # the bundles are charged; the storage is allocated once, no larger than the budget.
    nops = [{"op": "repeat", "path": "{scratch}/nop.s", "text": "NOP\n", "count": 4 << 20}]
    case(g, "asm: 4M NOP lines under --max-memory 64M", ["asm", "{scratch}/nop.s", "--arch", "v3", "--max-memory", "64M", "-o", "{out}/o.bin"], 2,
         "nop.s: memory budget exceeded: assembling: bundle 786433 (line 786433, 64 bytes a bundle) needs 64 bytes, 67108864 of the 67108864-byte budget",
         setup=nops, absent=["{out}/o.bin"])
    # 64K lines: 256 KiB of text and 4 MiB of bundles fit 5 MiB.
    few = [{"op": "repeat", "path": "{scratch}/nop.s", "text": "NOP\n", "count": 1 << 16}]
    case(g, "asm: 64K NOP lines under --max-memory 5M", ["asm", "{scratch}/nop.s", "--arch", "v3", "--max-memory", "5M", "-o", "{out}/o.bin"], 0,
         "wrote 65536 bundles (4194304 bytes)", setup=few, exists=["{out}/o.bin"])


def main():
    run_group()
    io_group()
    neff_group()
    memory_group()
    for group, cases in CASES.items():
        write(group, "cases.json", json.dumps(cases, indent=1) + "\n")
        print(f"{group}: {len(cases)} cases")


if __name__ == "__main__":
    main()
