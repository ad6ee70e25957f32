#!/usr/bin/env python3
"""An independent NEFF writer: builds a small kernel from the published byte layouts alone.

Nothing here imports tpbsim or any third-party package: only the Python standard library
(struct, tarfile, gzip, hashlib, json, io). The script writes

    independent/add_square.neff            the NEFF
    independent/add_square.expected/out.npy the expected output, computed here in pure Python

The kernel (generation v3, "cayman"), out[16, 32] = (2·(x + y) + 0.5)², all fp32:

    SP   bundle 0: DMATRIGGER queue "in"  → x, y into SBUF; each entry increments semaphore 1
    DVE  bundle 0: waits semaphore 1 ≥ 2; TensorTensor ADD s = x + y;   SEM_INC_COMPLETE sem 3
    ACT  bundle 0: waits semaphore 3 ≥ 1; Activate square(2·s + 0.5);   SEM_INC_COMPLETE sem 2
    SP   bundle 1: waits semaphore 2 ≥ 1; DMATRIGGER queue "out" → out

Byte layouts used (tpbsim's facts digest, /work/shared/isa-facts.md, and docs/neff.md):

* bundle header: opcode @0, inst_word_len 0x10 @1; events: wait_mode @4, wait_idx @5,
  update_mode @6, update_idx @7, semaphore_value u32 @8 (WAIT_MODE SEM_GE_IMM = 5,
  UPDATE_MODE SEM_INC_COMPLETE = 0x13);
* ADDR4: immediate byte address, SBUF partition p at p·0x40000 (v3);
* TENSOR3D: ADDR4 +0, i16 stride[3] +4, u16 num[3] +10 (dimension 0 innermost);
* TensorTensor 0x41: dtype pair +12 (low nibble src0, high nibble src1), out dtype +13,
  ALU op +14 (ADD = 4), partitions +15, src0 +16, src1 +32, dst +48;
* Activate 0x21: imm_src +12, scale_src +13, accumulator_cmd +14, bias_src_n +15 (inverted:
  INSTRUCTION = 1), src +16, dtype pair +32 (low in, high bias), out dtype +33, partitions +34,
  function +35 (Square = wire 30), scale f32 +36, bias +40 (fp32 bits when INSTRUCTION), imm +44,
  dst +48;
* DMATRIGGER 0xC1: queue name (ASCII, NUL-terminated) +0x0C, block id u32 +0x30;
* DTYPE FP32 = 0x0A;
* NEFF header (1024 bytes, little-endian): pkg_version u64 @0, header_size @8, data_size @16,
  neff_version_major @24, minor @32, build_version[128] @40, num_tpb u32 @168, hash[32] @172,
  uuid[16] @204, name[256] @220, requested_tpb_count u32 @476, tpb_per_node[64] @480,
  feature_bits u64 @544, lnc_size u32 @552; pkg_version 2 = gzip-compressed tar with the MD5 of
  the compressed bytes in hash[0..16];
* members: neff.json, sg00/def.json (variables, DMA queues, the SP stream named through
  `definition.sp._instr`), the DVE stream under its tar token `sg00/dve_instr`, the ACT stream
  under its TitleCase name `sg00/Activation.bin`, the SP DMA sidecar `sg00/SP.json`, and the
  inputs as `.npy` (format 1.0, written by hand here).

    python3 testdata/neff/independent_writer.py
"""

import gzip
import hashlib
import io
import json
import os
import struct
import tarfile

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "independent")

P, F = 16, 32  # partitions × elements
FP32 = 0x0A
SBUF_PARTITION = 0x40000  # v3 partition stride in bytes
X_OFF, Y_OFF, S_OFF, O_OFF = 0, 1024, 2048, 3072  # byte offsets inside each partition


def f32(v):
    """Round a Python float to the nearest fp32 (ties to even)."""
    return struct.unpack("<f", struct.pack("<f", v))[0]


# ---------------------------------------------------------------------------- bundles


def bundle(opcode):
    b = bytearray(64)
    b[0] = opcode
    b[1] = 0x10
    return b


def events(b, wait=None, inc=None):
    if wait is not None:
        sem, value = wait
        b[4], b[5] = 5, sem  # SEM_GE_IMM
        struct.pack_into("<I", b, 8, value)
    if inc is not None:
        b[6], b[7] = 0x13, inc  # SEM_INC_COMPLETE
    return b


def tensor3d(b, off, offset, n):
    """TENSOR3D at `off`: `n` dense elements from byte `offset` of partition 0."""
    struct.pack_into("<I", b, off, offset)  # ADDR4, immediate, partition 0
    struct.pack_into("<hhh", b, off + 4, 1, 1, 1)
    struct.pack_into("<HHH", b, off + 10, n, 1, 1)


def tensor_tensor_add():
    b = events(bundle(0x41), wait=(1, 2), inc=3)
    b[12] = FP32 | FP32 << 4
    b[13] = FP32
    b[14] = 0x04  # ADD
    b[15] = P
    tensor3d(b, 16, X_OFF, F)
    tensor3d(b, 32, Y_OFF, F)
    tensor3d(b, 48, S_OFF, F)
    return bytes(b)


SCALE, BIAS = 2.0, 0.5


def activate_square():
    b = events(bundle(0x21), wait=(3, 1), inc=2)
    b[12] = 0  # imm_src INSTRUCTION
    b[13] = 0  # scale_src INSTRUCTION
    b[14] = 0  # accumulator_cmd IDLE
    b[15] = 1  # bias_src_n: INSTRUCTION (inverted encoding)
    tensor3d(b, 16, S_OFF, F)
    b[32] = FP32 | FP32 << 4
    b[33] = FP32
    b[34] = P
    b[35] = 30  # Square
    struct.pack_into("<f", b, 36, SCALE)
    struct.pack_into("<f", b, 40, BIAS)
    tensor3d(b, 48, O_OFF, F)
    return bytes(b)


def dma_trigger(queue, block, wait=None):
    b = events(bundle(0xC1), wait=wait)
    name = queue.encode("ascii")
    b[12 : 12 + len(name)] = name
    struct.pack_into("<I", b, 0x30, block)
    return bytes(b)


# ---------------------------------------------------------------------------- .npy and data


def npy(descr, shape, data):
    """A .npy file, format version 1.0: magic, version, u16 header length, the header dict padded
    with spaces and a newline to a multiple of 64 bytes, then the C-order data."""
    dims = ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "")
    header = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': ({dims}), }}"
    total = 10 + len(header) + 1
    header += " " * ((-total) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1") + data


def lcg_values(seed, n):
    """Deterministic fp32 values in about [-4, 4) with full mantissas."""
    s = seed
    out = []
    for _ in range(n):
        s = (s * 6364136223846793005 + 1442695040888963407) % (1 << 64)
        out.append(f32(((s >> 11) / float(1 << 53)) * 8.0 - 4.0))
    return out


def f32_bytes(vals):
    return struct.pack(f"<{len(vals)}f", *vals)


# ---------------------------------------------------------------------------- archive and header


def tar_bytes(members):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(members):
            data = members[name]
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def header(payload, name):
    h = bytearray(1024)
    struct.pack_into("<QQQQQ", h, 0, 2, 1024, len(payload), 2, 0)
    build = b"independent stdlib writer"
    h[40 : 40 + len(build)] = build
    struct.pack_into("<I", h, 168, 1)  # num_tpb
    h[172 : 172 + 16] = hashlib.md5(payload).digest()
    h[204 : 204 + 16] = hashlib.md5(b"uuid:" + name).digest()
    h[220 : 220 + len(name)] = name
    struct.pack_into("<I", h, 476, 1)  # requested_tpb_count
    struct.pack_into("<Q", h, 544, 0)  # feature_bits
    struct.pack_into("<I", h, 552, 1)  # lnc_size
    return bytes(h)


def dma_entry(src, dst, src_off, dst_off, sem=None):
    e = {
        "from": src,
        "to": dst,
        "from_sizes": [P, F],
        "to_sizes": [P, F],
    }
    stride = SBUF_PARTITION // 4  # elements per partition step
    if src == "state_buffer":
        e["from_offset"], e["from_steps"] = src_off, [stride, 1]
    if dst == "state_buffer":
        e["to_offset"], e["to_steps"] = dst_off, [stride, 1]
    if sem is not None:
        e["sem"] = sem
    return e


def kernel_parts(x, y):
    """def.json, the SP sidecar and the other members of the kernel, for inputs `x` and `y`."""
    var = lambda i, name, kind, **kw: dict(var_id=i, name=name, type=kind, **kw)
    fp = dict(size=P * F * 4, dtype="float32", shape=[P, F])
    def_json = {
        "definition": {"sp": {"_instr": "SP.bin"}},
        "var": [
            var(1, "state_buffer", "state-buffer"),
            var(2, "x", "input", file_name="x.npy", **fp),
            var(3, "y", "input", file_name="y.npy", **fp),
            var(4, "out", "output", **fp),
        ],
        "dma_queue": [{"name": "in"}, {"name": "out"}],
    }
    sp_json = {
        "dma": [
            {
                "queue": "in",
                "id": 0,
                "desc": [
                    dma_entry("x", "state_buffer", 0, X_OFF, sem=1),
                    dma_entry("y", "state_buffer", 0, Y_OFF, sem=1),
                ],
            },
            {"queue": "out", "id": 0, "desc": [dma_entry("state_buffer", "out", O_OFF, 0)]},
        ]
    }
    members = {
        "neff.json": js({"target_arch": "cayman"}),
        "sg00/SP.bin": dma_trigger("in", 0) + dma_trigger("out", 0, wait=(2, 1)),
        "sg00/dve_instr": tensor_tensor_add(),
        "sg00/Activation.bin": activate_square(),
        "sg00/x.npy": npy("<f4", [P, F], f32_bytes(x)),
        "sg00/y.npy": npy("<f4", [P, F], f32_bytes(y)),
    }
    return def_json, sp_json, members


def js(v):
    return (json.dumps(v, indent=1, sort_keys=True) + "\n").encode()


def kernel_members(x, y):
    def_json, sp_json, members = kernel_parts(x, y)
    members["sg00/def.json"] = js(def_json)
    members["sg00/SP.json"] = js(sp_json)
    return members


def main():
    x = lcg_values(1, P * F)
    y = lcg_values(2, P * F)
    expected = []
    for a, b in zip(x, y):
        s = f32(a + b)
        t = f32(f32(s * SCALE) + BIAS)
        expected.append(f32(t * t))

    members = kernel_members(x, y)
    payload = gzip.compress(tar_bytes(members), compresslevel=9, mtime=0)
    name = b"add_square"
    os.makedirs(os.path.join(OUT, "add_square.expected"), exist_ok=True)
    for path, data in [
        (os.path.join(OUT, "add_square.neff"), header(payload, name) + payload),
        (os.path.join(OUT, "add_square.expected", "out.npy"), npy("<f4", [P, F], f32_bytes(expected))),
    ]:
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
        print(f"wrote {os.path.relpath(path, HERE)} ({len(data)} bytes)")


if __name__ == "__main__":
    main()
