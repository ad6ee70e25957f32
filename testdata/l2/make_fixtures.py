#!/usr/bin/env python3
"""Write testdata/l2/fixtures.txt: crafted legal and illegal bundles with their expected L2
verdict, first failing rule and assertion code.

Line format (one bundle per line, '#' comments):
    <gen> <engine> <verdict> <rule|-> <code|-> <128 hex digits>
verdict is `valid` or `error`; for `error`, rule/code name the first failing rule and the
assertion code it reports under.

Run: python3 testdata/l2/make_fixtures.py > testdata/l2/fixtures.txt
"""
import struct

PSUM = 0x2000000
BF16, FP16, FP32, INT32, UINT32, FP8E4, FP8E5, FP4 = 6, 7, 10, 8, 9, 14, 15, 16


def hdr(op, length=0x10):
    b = bytearray(64)
    b[0] = op
    b[1] = length
    return b


def u16(b, off, v):
    struct.pack_into("<H", b, off, v & 0xFFFF)


def u32(b, off, v):
    struct.pack_into("<I", b, off, v & 0xFFFFFFFF)


def t3(b, off, addr, nums):
    u32(b, off, addr)
    for i in range(3):
        u16(b, off + 4 + 2 * i, 1)
        u16(b, off + 10 + 2 * i, nums[i])


def lw(gen, dt=BF16, cols=128, colg=0xF, rowg=0xF, src=0x100):
    b = hdr(0x01)
    t3(b, 16, src, (1, 1, 128))
    b[32] = dt
    b[38] = 128
    b[39] = cols
    b[44] = rowg
    b[45] = colg
    if gen == "v2":
        b[46] = 0x10
    return b


def mm(gen, dst=PSUM, out=0, colg=0xF, cols=128, acc=3, xbus=None):
    b = lw(gen, cols=cols, colg=colg)
    b[0] = 0x02
    t3(b, 48, dst, (1, 1, 128))
    b[43] = acc
    if gen != "v2":
        b[40] = out
    elif xbus is not None:
        b[46] = xbus
    return b


def dual(sel, **kw):
    b = lw("v4", dt=FP8E5)
    b[35] = sel
    u16(b, 24, 0x10)
    u16(b, 30, 2)
    for k, v in kw.items():
        b[int(k[1:])] = v
    return b


def tt(src1=0x200, dst=PSUM, out=FP32, op=0x04, src0=0x100):
    b = hdr(0x41)
    b[12] = BF16 | (BF16 << 4)
    b[13] = out
    b[14] = op
    b[15] = 32
    t3(b, 16, src0, (1, 1, 64))
    t3(b, 32, src1, (1, 2, 32))
    t3(b, 48, dst, (1, 1, 64))
    return b


def act(dst=0x100, out=BF16):
    b = hdr(0x21)
    b[15] = 1
    t3(b, 16, PSUM, (1, 4, 32))
    b[32] = FP32
    b[33] = out
    b[34] = 64
    b[35] = 5
    u32(b, 36, 0x3F800000)
    t3(b, 48, dst, (1, 2, 64))
    return b


def ts(opc=0x43):
    b = hdr(opc)
    t3(b, 16, 0x100, (1, 1, 64))
    b[32] = BF16
    b[33] = BF16
    b[34] = 16
    b[36] = 0x06
    b[37] = 0x04
    t3(b, 48, 0x400, (1, 1, 64))
    return b


def t4(b, off, addr, nums):
    u32(b, off, addr)
    for i in range(4):
        u16(b, off + 4 + 2 * i, 1)
        u16(b, off + 12 + 2 * i, nums[i])


def copy():
    b = hdr(0x46)
    t4(b, 12, 0x100, (1, 1, 2, 32))
    b[32] = BF16
    b[33] = BF16
    b[34] = 32
    t4(b, 44, 0x800, (1, 1, 1, 64))
    return b


def rs():
    b = hdr(0xBC)
    b[12] = 8
    b[13] = FP32 | (FP32 << 4)
    b[15] = 0x08
    u32(b, 20, 0xFF7FFFFF)
    u32(b, 24, 0x100)
    u16(b, 28, 1)
    u16(b, 30, 1)
    u16(b, 32, 1)
    u16(b, 34, 16)
    b[36] = 0x14
    b[37] = 0x16
    u32(b, 48, 0x200)
    u16(b, 52, 1)
    u16(b, 54, 1)
    u16(b, 56, 1)
    u16(b, 58, 16)
    return b


def nop(**kw):
    b = hdr(0xA0)
    for k, v in kw.items():
        b[int(k[1:])] = v
    return b


FMT = {"v2": 999, "v3": 1000, "v4": 934}
ENG = {"v2": 1083, "v3": 1084, "v4": 935}
rows = []


def add(gen, eng, verdict, rule, code, b, note):
    rows.append((note, gen, eng, verdict, rule, code, bytes(b).hex()))


for g in ("v2", "v3", "v4"):
    add(g, "pe", "valid", "-", "-", lw(g), "LdWeights bf16 128x128, full groups")
    add(g, "pe", "valid", "-", "-", mm(g), "Matmul into PSUM partition 0, FP32")
    add(g, "dve", "valid", "-", "-", tt(), "TensorTensor add, SBUF sources in one quadrant, PSUM dst")
    add(g, "act", "valid", "-", "-", act(), "Activate sigmoid PSUM -> SBUF bf16")
    add(g, "sp", "valid", "-", "-", nop(b32=5, b34=0x13), "EventSemaphore")
    add(g, "dve", "valid", "-", "-", nop(b4=1, b6=0x13, b32=5, b34=0x13), "EventSemaphore on DVE")
    add(g, "dve", "valid", "-", "-", ts(), "TensorScalar mult/add bf16")
    add(g, "dve", "valid", "-", "-", copy(), "Copy 4D bf16")
    if g != "v2":
        add(g, "dve", "valid", "-", "-", rs(), "RangeSelect")
    b = ts()
    b[12] = 2
    add(g, "dve", "error", "is_valid_s3d3_ts.accumulator_cmd", FMT[g], b, "plain TensorScalar with an accumulate command")
    add(g, "pe", "error", "has_valid_inst_len", FMT[g], hdr(0xA0, 0x08), "bad inst_word_len")
    add(g, "act", "error", "instruction_engine_check" if g == "v2" else "neuron_isa_check_opcode_on_engine",
        ENG[g], mm(g), "Matmul in the ACT stream")
    b = lw(g)
    b[41] = 1
    add(g, "pe", "error", "reserved_zero", FMT[g], b, "LdWeights reserved byte 41 set")
    add(g, "pe", "error", "valid_col_group_active_columns", FMT[g], lw(g, cols=0x81), "cols 0x81 > 0x80 (group 0xF)")
    add(g, "pe", "error", "valid_col_group_active_columns", FMT[g], lw(g, cols=0x41, colg=0x3) if g != "v2" else
        lw(g, cols=0x41, colg=0x3), "cols 0x41 > 0x40 (group 0x3)")
    add(g, "dve", "error", "tt_valid_partitions", FMT[g], tt(src1=32 << 18), "two SBUF sources in different quadrants")
    add(g, "dve", "error", "tt_valid_partitions", FMT[g], tt(src0=PSUM, src1=PSUM + 0x800, dst=0x300), "two PSUM sources")
    add(g, "act", "error", "tensor_start_addr_valid.psum_write_dtype", FMT[g], act(dst=PSUM + 0x800),
        "Activate writes bf16 to PSUM")
    add(g, "sp", "error", "has_valid_neuron_events.is_valid_enum(WAIT_MODE)", FMT[g], nop(b4=0x08), "unknown wait mode")
    add(g, "sp", "error", "has_valid_neuron_events.is_valid_enum(UPDATE_MODE)", FMT[g], nop(b6=0x06), "unknown update mode")
    add(g, "pe", "error", "instruction_engine_check" if g == "v2" else "neuron_isa_check_opcode_on_engine", ENG[g],
        hdr(0x0B), "opcode 0x0B not in the enum: the engine gate runs first (the format gate's header check fails too)")
    add(g, "dve", "error", "is_valid_s3s3d3_tt.alu_op", FMT[g], tt(op=0x1C), "CRC32 in TensorTensor arith")

# Matmul accumulate flags and v4-only behaviour.
add("v4", "pe", "valid", "-", "-", mm("v4", acc=6), "accumulate flags 6 legal on v4")
add("v4", "pe", "error", "mm_psum_flags", 934, mm("v4", acc=5), "accumulate flags 5 (START|ACCUMULATE)")
add("v3", "pe", "valid", "-", "-", mm("v3", acc=4), "accumulate flag 4 is legal on v3 (docs/isa.md P10)")
add("v3", "pe", "error", "mm_psum_flags", 1000, mm("v3", acc=7), "accumulate flags 7 (START|STOP|ACCUMULATE)")
add("v4", "pe", "valid", "-", "-", mm("v4", out=BF16), "v4 matmul writes bf16 to PSUM")
add("v3", "pe", "error", "has_valid_mm_out_dtype", 1000, mm("v3", out=BF16), "v3 matmul bf16 output")
add("v2", "pe", "error", "s3d3_mm_valid_xbus_sel", 999, mm("v2", colg=0x8, cols=0x20, dst=PSUM + (96 << 15), xbus=0x08),
    "col group 0x8 has no valid xbus case")
add("v2", "pe", "valid", "-", "-", mm("v2", colg=0x2, cols=0x20, dst=PSUM + (32 << 15), xbus=0x02), "col group 0x2, xbus 0x02")
add("v3", "pe", "error", "valid_mm_psum_quadrant", 1000, mm("v3", colg=0x2, cols=0x20), "col group 0x2 but PSUM partition 0")
# Dual-FP8 selectors (v4 only).
for sel, verdict in ((0, "valid"), (1, "valid"), (2, "error"), (3, "error"), (4, "valid"), (7, "error")):
    add("v4", "pe", verdict, "s3_lw_dual_fp8_restrictions" if verdict == "error" else "-",
        934 if verdict == "error" else "-", dual(sel), f"dual-FP8 selector {sel}")
add("v4", "pe", "error", "s3_lw_dual_fp8_restrictions", 934, dual(1, b45=0x3, b39=0x40), "dual-FP8 mode 1 needs col group 0xF")
add("v4", "pe", "error", "s3_lw_dual_fp8_restrictions", 934, dual(1, b32=BF16), "dual-FP8 mode 1 needs an FP8 input")
add("v4", "pe", "error", "s3_lw_dual_fp8_restrictions", 934, dual(1, b30=1), "dual-FP8 mode 1 partition word num[2] != 2")
add("v3", "pe", "valid", "-", "-", lw("v3", dt=FP8E5), "selector byte 0 on v3 LdWeights")

# Gates of the remaining typed formats.
def rd(op=0x24, count=1, neg=0):
    b = hdr(op)
    u32(b, 28, count)
    b[32] = FP32
    b[33] = neg
    b[34] = 128
    u32(b, 44, 0x400)
    u16(b, 48, 1)
    u16(b, 50, 1)
    return b


def dq(fmt=1, group=0, src=8, dst=16):
    b = hdr(0x7B)
    t3(b, 12, 0x100, (1, 1, src))
    b[32] = UINT32
    b[33] = UINT32
    b[34] = 32
    b[35] = fmt
    b[36] = group
    t3(b, 44, 0x1000, (1, 1, dst))
    return b


def trigger(name=b"q0"):
    b = hdr(0xC1)
    b[12:12 + len(name)] = name
    u32(b, 48, 1)
    return b


def memset(dst=0x100, dt=FP32):
    b = hdr(0x49)
    u32(b, 28, 64)
    b[32] = dt
    b[34] = 32
    t4(b, 44, dst, (1, 1, 1, 64))
    return b


def branch(cmp=0, dt=0, mode=3):
    b = hdr(0xA9)
    b[12] = cmp
    b[13] = dt
    b[14] = mode
    struct.pack_into("<Q", b, 48, 0x40)
    return b


for g in ("v2", "v3", "v4"):
    add(g, "act", "valid", "-", "-", rd(), "ReadAccumulator FP32, one element per partition")
    add(g, "dve", "valid", "-", "-", rd(0x9B, neg=1), "DveReadAccumulator negated")
    add(g, "act", "error", "is_valid_d1_rd.negated", FMT[g], rd(neg=1), "ACT ReadAccumulator negated")
    add(g, "act", "error", "is_valid_d1_rd.dst_element_count", FMT[g], rd(count=2), "ReadAccumulator count 2")
    add(g, "sp", "valid", "-", "-", trigger(), "DmaTrigger queue q0")
    add(g, "sp", "error", "is_valid_pseudo.name", FMT[g], trigger(b"q\x000x"), "DmaTrigger name with bytes after the NUL")
    add(g, "sp", "valid", "-", "-", hdr(0xA1), "Halt")
    b = hdr(0xA1)
    b[30] = 1
    add(g, "sp", "error", "reserved_zero", FMT[g], b, "Halt with a body byte set")
    add(g, "pool", "valid", "-", "-", memset(), "Memset FP32 4D")
    add(g, "pool", "error", "addr_aligned_dtype", FMT[g], memset(dst=0x102), "Memset FP32 at a 2-byte aligned address")
    add(g, "sp", "valid", "-", "-", branch(), "unconditional branch")
    add(g, "sp", "error", "is_valid_enum(CMP_OP)", FMT[g], branch(cmp=7), "compare op 7 (unused)")
    add(g, "sp", "error", "is_valid_dtype", FMT[g], branch(cmp=3), "conditional branch without a dtype")
for g in ("v3", "v4"):
    add(g, "pool", "valid", "-", "-", dq(), "TensorDequantize E2M1 -> E5M2, 2:1")
    add(g, "pool", "valid", "-", "-", dq(3, 8, 10, 16), "TensorDequantize NF4 group 8, 8:5")
    add(g, "pool", "error", "s3d3_tens_dequant_element_count_check_t3d", FMT[g], dq(1, 0, 8, 8), "TensorDequantize 1:1")
    add(g, "pool", "error", "has_valid_dequant_fmt_group_size", FMT[g], dq(4, 8, 10, 16), "E2M3 with group 8")
    add(g, "pool", "error", "has_valid_dequant_fmt", FMT[g], dq(0), "dequant_fmt INVALID")

def t2(b, off, addr, nums):
    u32(b, off, addr)
    u16(b, off + 4, 1)
    u16(b, off + 6, 1)
    u16(b, off + 8, nums[0])
    u16(b, off + 10, nums[1])


def select_reduce(op1=0x08, data=BF16):
    b = hdr(0xEA)
    t2(b, 12, 0x000, (1, 4))
    t2(b, 24, 0x040, (1, 4))
    b[37] = op1
    b[40] = 2 | (data << 4)  # INT8 predicate
    b[41] = FP32
    b[42] = 2
    b[43] = FP32
    b[44] = 2
    t2(b, 48, 0x080, (1, 4))
    return b


def ts_select(pred_dt=5):
    b = hdr(0x98)
    t3(b, 16, 0x000, (1, 1, 3))
    b[33] = 2
    b[34] = 4  # INT16
    b[35] = pred_dt
    b[39] = 1
    u32(b, 40, 0xABCDFFF9)
    u32(b, 44, 0x20)
    t3(b, 48, 0x40, (1, 1, 3))
    return b


for g in ("v2", "v3", "v4"):
    add(g, "dve", "valid", "-", "-", select_reduce(), "SelectReduce int8 predicate, bf16 data, MAX accumulate")
    add(g, "dve", "error", "is_valid_select_reduce.ops", FMT[g], select_reduce(op1=0x09), "SelectReduce reduce op MIN")
    add(g, "dve", "error", "is_valid_select_reduce.dtypes", FMT[g], select_reduce(data=INT32), "SelectReduce int32 data")
    add(g, "pool", "error", "is_valid_s3d3_ts_select", FMT[g], ts_select(pred_dt=UINT32), "predicate wider than the data")



def raw(hexs):
    b = bytearray(64)
    h = bytes.fromhex(hexs)
    b[: len(h)] = h
    return b


# Records the runtime and compiler emit (docs/isa.md conflicts P9..P11).
for g in ("v2", "v3", "v4"):
    add(g, "sp", "valid", "-", "-", raw("a810000000000000000000000408010005000000070000002a"),
        "the runtime's add_add32_imm record (CTRL_AL dst_dtype 0)")
    cb = raw("d810")
    cb[12:16] = (5).to_bytes(4, "little")
    cb[16:20] = (2).to_bytes(4, "little")
    add(g, "sp", "valid", "-", "-", cb, "CoreBarrier id 5, index 2")
    cb[0x14] = 1
    add(g, "sp", "error", "reserved_zero", FMT[g], cb, "CoreBarrier with a non-zero byte between index and companion")
    add(g, "sp", "valid", "-", "-", nop(b4=1, b32=1, b34=0x13), "EventSemaphore with EQ waits")
t = lw("v2")
t[0x13] = 0x80
add("v2", "pe", "valid", "-", "-", t, "v2 transposed LdWeights (0x80 at +0x13)")
t = lw("v3")
t[0x13] = 0x80
add("v3", "pe", "error", "tensor_start_addr_valid", 1000, t, "0x80 at +0x13 is the ADDR4 register marker on v3")

print(__doc__.strip().replace("\n", "\n# ").join(["# ", ""]))
for note, *r in rows:
    print(f"# {note}")
    print(" ".join(str(x) for x in r))
