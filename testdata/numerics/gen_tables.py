#!/usr/bin/env python3
"""Generate the numerics test tables of tpbsim (cast engine and MX quantize/dequantize).

Requires numpy and ml_dtypes (`pip install numpy ml_dtypes`). The output is deterministic;
re-running must reproduce the committed files byte for byte:

    python3 testdata/numerics/gen_tables.py [OUT_DIR]   # default: this script's directory

Files (all little-endian, gzip-compressed with a zero timestamp):

decode.<fmt>.bin.gz
    u32 fp32 bit pattern of every code 0 .. 2^bits-1 of <fmt>, as ml_dtypes / numpy decode it
    (`codes.view(fmt).astype(float32)`), stored as wrapping differences between consecutive
    entries. float8_e8m0fnu is ml_dtypes' scale reading 2^(e-127).
roundtrip.<fmt>.bin.gz
    The codes whose decoded fp32 value ml_dtypes does not re-encode to the code itself:
    u32 count, then (code, result) pairs (u8 or u16); every other code round-trips to itself.
narrow.<fmt>.bin.gz
    u32 count N, then N u32 fp32 inputs, then N codes (u8 or u16): what ml_dtypes gives for
    `inputs.astype(fmt)` (no saturation, ml_dtypes NaN forms). Integer formats store two code
    arrays instead of one: round-to-nearest-even-then-saturate, then truncate-then-saturate,
    both with NaN -> MAX (MIN if the sign bit is set; unsigned: 0 if set), computed here with
    explicit numpy arithmetic.
mx.json + mx.bin.gz
    MX quantize/dequantize cases from the independent numpy reference below; mx.json names
    each case's parameters and its byte ranges inside the decompressed mx.bin.
"""

import gzip
import json
import os
import sys

import ml_dtypes as md
import numpy as np

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
RNG = np.random.default_rng(0x7B5)

FLOAT_FORMATS = {
    # name: (ml_dtypes type, code bits)
    "bfloat16": (md.bfloat16, 16),
    "float16": (np.float16, 16),
    "float8_e3m4": (md.float8_e3m4, 8),
    "float8_e4m3": (md.float8_e4m3, 8),
    "float8_e4m3fn": (md.float8_e4m3fn, 8),
    "float8_e5m2": (md.float8_e5m2, 8),
    "float4_e2m1fn": (md.float4_e2m1fn, 4),
}
INT_FORMATS = {
    "uint8": (np.uint8, 8),
    "int8": (np.int8, 8),
    "uint16": (np.uint16, 16),
    "int16": (np.int16, 16),
}


def write_gz(name, payload):
    path = os.path.join(OUT, name)
    with open(path, "wb") as f:
        with gzip.GzipFile(fileobj=f, mode="wb", mtime=0, compresslevel=9, filename="") as g:
            g.write(payload)


def write_decode(name, dec32):
    """Decode tables are stored as wrapping u32 differences between consecutive entries (the
    first entry is the difference from 0), which makes the monotone tables compress well."""
    bits = dec32.view(np.uint32).astype(np.uint64)
    delta = (np.diff(bits, prepend=np.uint64(0)) % (1 << 32)).astype(np.uint32)
    write_gz(f"decode.{name}.bin.gz", delta.astype("<u4").tobytes())


def write_roundtrip(name, codes, rt, bits):
    """Round-trip tables list only the codes whose re-encoding is not the code itself:
    u32 count, then (code, result) pairs of u8 or u16."""
    diff = np.nonzero(rt != codes)[0]
    ct = "<u2" if bits == 16 else "u1"
    pairs = np.stack([codes[diff], rt[diff]], axis=1).astype(ct)
    write_gz(f"roundtrip.{name}.bin.gz", np.uint32(len(diff)).astype("<u4").tobytes() + pairs.tobytes())


def code_dtype(bits):
    return np.uint16 if bits == 16 else np.uint8


def all_codes(bits):
    return np.arange(1 << bits, dtype=np.uint32).astype(code_dtype(bits))


def f32(bits_u32):
    return np.asarray(bits_u32, dtype=np.uint32).view(np.float32)


def special_inputs():
    """fp32 inputs that every narrowing must handle: zeros, infinities, NaN payloads,
    fp32 subnormals, extremes."""
    b = [
        0x00000000, 0x80000000, 0x7F800000, 0xFF800000,
        0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF800001, 0x7FBFFFFF, 0x7FFFFFFF, 0xFFFFFFFF,
        0x7FC00001, 0x7FA00000, 0x7FD55555,
        0x00000001, 0x80000001, 0x007FFFFF, 0x00800000, 0x00400000,
        0x7F7FFFFF, 0xFF7FFFFF, 0x3F800000, 0xBF800000,
    ]
    return np.array(b, dtype=np.uint32)


def boundary_inputs(values, max_pairs=None):
    """Midpoints between consecutive finite non-negative values, one fp32 ulp either side,
    the values themselves, the overflow threshold and half the smallest subnormal; both signs."""
    v = np.unique(values[np.isfinite(values) & (values >= 0)].astype(np.float64))
    lo, hi = v[:-1], v[1:]
    if max_pairs is not None and len(lo) > max_pairs:
        idx = np.unique(np.concatenate([
            np.arange(64), np.arange(len(lo) - 64, len(lo)),
            RNG.choice(len(lo), max_pairs - 128, replace=False),
        ]))
        lo, hi = lo[idx], hi[idx]
    mids = ((lo + hi) / 2).astype(np.float32)  # exact: one more bit than the format
    assert np.all(mids.astype(np.float64) == (lo + hi) / 2)
    top = v[-1]
    ulp_top = v[-1] - v[-2]
    extra = np.array([top + ulp_top / 2, top + ulp_top, top * 2, v[1] / 2, v[1] / 4], dtype=np.float64)
    extra = extra.astype(np.float32)
    pts = np.concatenate([mids, lo.astype(np.float32), hi.astype(np.float32), extra])
    pts = np.concatenate([pts, np.nextafter(pts, np.float32(np.inf)), np.nextafter(pts, np.float32(-np.inf))])
    pts = pts[np.isfinite(pts)]
    return np.concatenate([pts, -pts]).view(np.uint32)


def random_inputs(lo_exp, hi_exp, n_in_range, n_any):
    """Random fp32: log-uniform magnitudes over [2^lo_exp, 2^hi_exp) with random signs, plus
    uniformly random bit patterns."""
    mag = np.exp2(RNG.uniform(lo_exp, hi_exp, n_in_range)).astype(np.float32)
    sign = RNG.integers(0, 2, n_in_range).astype(np.uint32) << 31
    a = mag.view(np.uint32) | sign
    b = RNG.integers(0, 1 << 32, n_any, dtype=np.uint64).astype(np.uint32)
    return np.concatenate([a, b])


def gen_float(name, typ, bits):
    codes = all_codes(bits)
    dec = codes.view(typ) if bits >= 8 else codes.astype(np.uint8).view(typ)
    dec32 = dec.astype(np.float32)
    write_decode(name, dec32)
    with np.errstate(invalid="ignore"):
        rt = dec32.astype(typ).view(code_dtype(max(bits, 8)))
    write_roundtrip(name, codes, rt, bits)

    finite = dec32[np.isfinite(dec32)]
    max_pairs = 1000 if bits == 16 else None
    mags = np.abs(finite[finite != 0])
    lo_exp = int(np.floor(np.log2(mags.min()))) - 3
    hi_exp = int(np.ceil(np.log2(mags.max()))) + 3
    n_rand = 2048
    inputs = np.unique(np.concatenate([
        special_inputs(), boundary_inputs(finite, max_pairs), random_inputs(lo_exp, hi_exp, n_rand, n_rand),
    ]))
    with np.errstate(invalid="ignore", over="ignore"):
        out = f32(inputs).astype(typ)
    out_codes = out.view(np.uint8 if bits <= 8 else np.uint16)
    ct = "<u2" if bits == 16 else "u1"
    payload = np.uint32(len(inputs)).astype("<u4").tobytes() + inputs.astype("<u4").tobytes() \
        + out_codes.astype(ct).tobytes()
    write_gz(f"narrow.{name}.bin.gz", payload)


def int_narrow(x, typ, mode):
    info = np.iinfo(typ)
    x64 = x.astype(np.float64)
    r = np.rint(x64) if mode == "rne" else np.trunc(x64)
    r = np.clip(np.nan_to_num(r, nan=0.0), info.min, info.max)
    out = r.astype(np.int64)
    neg = (x.view(np.uint32) >> 31) == 1
    nan = np.isnan(x)
    out[nan & ~neg] = info.max
    out[nan & neg] = info.min
    return out.astype(typ)


def gen_int(name, typ, bits):
    codes = all_codes(bits)
    dec32 = codes.view(typ).astype(np.float32)
    write_decode(name, dec32)
    rt = int_narrow(dec32, typ, "rne").view(code_dtype(bits))
    write_roundtrip(name, codes, rt, bits)
    info = np.iinfo(typ)
    ints = np.arange(info.min, info.max + 1, dtype=np.float64)
    halves = np.concatenate([ints - 0.5, ints + 0.5])
    halves = halves[RNG.choice(len(halves), min(len(halves), 1500), replace=False)].astype(np.float32)
    edges = np.array([info.min - 1, info.min - 0.5, info.min - 0.49, info.max + 0.49, info.max + 0.5,
                      info.max + 1, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.49999997, -0.49999997, 1e10, -1e10],
                     dtype=np.float32)
    pts = np.concatenate([halves, edges])
    pts = np.concatenate([pts, np.nextafter(pts, np.float32(np.inf)), np.nextafter(pts, np.float32(-np.inf))])
    inputs = np.unique(np.concatenate([pts.view(np.uint32), special_inputs(), random_inputs(-4, bits + 2, 2048, 1024)]))
    x = f32(inputs)
    ct = "<u2" if bits == 16 else "u1"
    rne = int_narrow(x, typ, "rne").view(code_dtype(bits))
    trunc = int_narrow(x, typ, "trunc").view(code_dtype(bits))
    payload = np.uint32(len(inputs)).astype("<u4").tobytes() + inputs.astype("<u4").tobytes() \
        + rne.astype(ct).tobytes() + trunc.astype(ct).tobytes()
    write_gz(f"narrow.{name}.bin.gz", payload)


def gen_e8m0():
    codes = np.arange(256, dtype=np.uint8)
    dec = codes.view(md.float8_e8m0fnu).astype(np.float32)
    write_decode("float8_e8m0fnu", dec)


# ---------------------------------------------------------------------------------------------
# MX reference (numpy), written from the documented algorithm, independent of the Rust code.

MX_ELEMS = {
    # data format: (ml_dtypes element type, EMAX, max finite, container bytes, element bits)
    "float4_e2m1fn_x4": (md.float4_e2m1fn, 2, 6.0, 2, 4),
    "float8_e4m3fn_x4": (md.float8_e4m3fn, 8, 448.0, 4, 8),
    "float8_e5m2_x4": (md.float8_e5m2, 15, 57344.0, 4, 8),
}


def mx_slot(i):
    return (i & 3) + 32 * (i >> 2)


def mx_narrow(y, fmt):
    """fp32 -> element codes with saturation on and NaN selector off."""
    typ, _, mx, _, _ = MX_ELEMS[fmt]
    sign = (y.view(np.uint32) >> 31).astype(np.uint8)
    nan = np.isnan(y)
    clipped = np.clip(np.nan_to_num(y, nan=0.0, posinf=mx, neginf=-mx), -mx, mx)
    codes = clipped.astype(typ).view(np.uint8).copy()
    if fmt == "float8_e4m3fn_x4":
        codes[nan] = 0x7F | (sign[nan] << 7)
    elif fmt == "float8_e5m2_x4":
        codes[nan] = 0x7E
    else:
        codes[nan] = sign[nan] << 3
    # ml_dtypes keeps -0.0 for negative inputs that round to zero, as the narrowing does.
    return codes


def mx_quantize(x32, fmt, alt_emax):
    p, f = x32.shape
    _, emax, _, _, _ = MX_ELEMS[fmt]
    emax -= 1 if alt_emax else 0
    e = ((x32.view(np.uint32) >> 23) & 0xFF).astype(np.int64)
    block = e.reshape(p // 8, 8, f // 4, 4).max(axis=(1, 3))
    s = np.maximum(block - emax, 0)
    s[s == 0] = 1
    s_elem = np.repeat(np.repeat(s, 8, axis=0), 4, axis=1)
    mul = ((254 - s_elem).astype(np.uint32) << 23).view(np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        y = (x32 * mul).astype(np.float32)
    codes = mx_narrow(y, fmt)
    return codes, s.astype(np.uint8)


def mx_pack(codes, fmt):
    """Element codes [P, F] -> packed data bytes, row-major: FP8 one byte per element in order
    (a ×4 container holds elements 4k..4k+3 in bytes 0..3); FP4 two per byte, element k of a row in
    byte k/2, low nibble for even k."""
    if MX_ELEMS[fmt][4] == 8:
        return codes.astype(np.uint8).tobytes()
    lo = codes[:, 0::2] & 0xF
    hi = codes[:, 1::2] & 0xF
    return (lo | (hi << 4)).astype(np.uint8).tobytes()


def mx_scale_buffer(s):
    rows, cols = s.shape
    buf = np.zeros((mx_slot(rows - 1) + 1, cols), dtype=np.uint8)
    for i in range(rows):
        buf[mx_slot(i)] = s[i]
    return buf


def mx_dequantize(codes, s, fmt):
    typ = MX_ELEMS[fmt][0]
    vals = codes.astype(np.uint8).view(typ).astype(np.float32)
    s_elem = np.repeat(np.repeat(s.astype(np.int64), 8, axis=0), 4, axis=1)
    with np.errstate(invalid="ignore", over="ignore"):
        out = np.ldexp(vals, (s_elem - 127).astype(np.int32)).astype(np.float32)
    out[s_elem == 0xFF] = np.float32(np.nan)
    out = out.view(np.uint32).copy()
    out[s_elem == 0xFF] = 0x7FC00000
    return out


def mx_input(p, f, src):
    """A random tile with per-block character: wide dynamic range, all-zero blocks, NaN and Inf
    blocks, tiny (subnormal) blocks, exact powers of two, mixed signs and negative zeros."""
    x = np.zeros((p, f), dtype=np.float32)
    for bi in range(p // 8):
        for bj in range(f // 4):
            kind = RNG.integers(0, 10)
            spread, center = (12, RNG.uniform(-40, 40)) if src == "bfloat16" else (5, RNG.uniform(-9, 9))
            blk = np.exp2(RNG.uniform(-spread, spread, (8, 4)) + center) * RNG.choice([-1.0, 1.0], (8, 4))
            if kind == 0:
                blk[:] = 0.0
                if RNG.integers(0, 2):
                    blk[RNG.integers(0, 8), RNG.integers(0, 4)] = -0.0
            elif kind == 1:
                blk[RNG.integers(0, 8), RNG.integers(0, 4)] = np.nan
            elif kind == 2:
                blk[RNG.integers(0, 8), RNG.integers(0, 4)] = RNG.choice([np.inf, -np.inf])
            elif kind == 3:
                blk = np.exp2(np.floor(RNG.uniform(-8, 8, (8, 4)))) * np.sign(blk)
            elif kind == 4:
                tiny = -130.0 if src == "bfloat16" else -20.0
                blk = np.exp2(RNG.uniform(tiny, tiny + 6, (8, 4))) * RNG.choice([-1.0, 1.0], (8, 4))
            x[bi * 8:(bi + 1) * 8, bj * 4:(bj + 1) * 4] = blk
    typ = md.bfloat16 if src == "bfloat16" else np.float16
    with np.errstate(over="ignore", invalid="ignore"):
        xs = x.astype(typ)
    return xs


def gen_mx():
    cases = []
    blob = bytearray()

    def put(arr_bytes):
        off = len(blob)
        blob.extend(arr_bytes)
        return [off, len(arr_bytes)]

    shapes = [(8, 4), (32, 16), (128, 8), (64, 32)]
    for fmt in MX_ELEMS:
        for src in ("bfloat16", "float16"):
            for (p, f) in shapes:
                for alt in (False, True):
                    if alt and (p, f) != (32, 16):
                        continue
                    xs = mx_input(p, f, src)
                    x32 = xs.astype(np.float32)
                    codes, s = mx_quantize(x32, fmt, alt)
                    scale_buf = mx_scale_buffer(s)
                    # Dequantize the quantized tile, with some scales forced to NaN (0xFF) and to
                    # the extremes 0 and 254 that quantize never emits.
                    s2 = s.copy()
                    flat = s2.reshape(-1)
                    for k in range(0, flat.size, 5):
                        flat[k] = [0xFF, 0, 254, 1, 127][(k // 5) % 5]
                    deq = mx_dequantize(codes, s2, fmt)
                    cases.append({
                        "data_format": fmt,
                        "source_format": src,
                        "partitions": p,
                        "free": f,
                        "alt_emax": alt,
                        "source": put(xs.view(np.uint16).astype("<u2").tobytes()),
                        "data": put(mx_pack(codes, fmt)),
                        "scale": put(scale_buf.tobytes()),
                        "scale_rows": int(scale_buf.shape[0]),
                        "dequant_scale": put(mx_scale_buffer(s2).tobytes()),
                        "dequant": put(deq.astype("<u4").tobytes()),
                    })
    write_gz("mx.bin.gz", bytes(blob))
    with open(os.path.join(OUT, "mx.json"), "w") as f:
        json.dump({"cases": cases}, f, indent=1)
        f.write("\n")


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, (typ, bits) in FLOAT_FORMATS.items():
        gen_float(name, typ, bits)
    for name, (typ, bits) in INT_FORMATS.items():
        gen_int(name, typ, bits)
    gen_e8m0()
    gen_mx()


if __name__ == "__main__":
    main()
