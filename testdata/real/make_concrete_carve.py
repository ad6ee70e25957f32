#!/usr/bin/env python3
"""Rebuild the one public NEFF written by the real toolchain: the single-rank all-reduce test
model embedded in libnrt.so 2.31.24, as carved in GrigoryEvko/crucible-notes
neuronx-gpsimd/wiki/src/neff/concrete-carve.md (cited below as "the page", with its section).

Python standard library only. Writes, next to this script:

    concrete_carve.neff           the NEFF
    concrete_carve.input.npy      a 32-element float32 input (0.5, 1.5, ..., 31.5)
    concrete_carve.ref/output.npy the expected output: a copy of the input (one rank, so the
                                  all-reduce of the gradient is the gradient itself)

Every byte the page gives is written as it gives it. Every byte it does not give is listed in
CHOICES (printed with --choices, and kept in concrete_carve.md) with what was chosen.

    python3 testdata/real/make_concrete_carve.py
"""

import hashlib
import io
import json
import os
import struct
import sys
import tarfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
NAME = "concrete_carve"

CHOICES = [
    ("header build_version tail", "NUL bytes after the label (the page: zero to 0xC07EC8)"),
    ("header reserved bytes 0x22C..0x400", "zeros (the page shows no non-zero byte there)"),
    ("gzip deflate stream", "zlib level 9, raw deflate; the page gives only its first bytes "
     "(ed 5b 4b ...), its length 1709 and its MD5, so the compressed bytes, the data_size and "
     "the MD5 differ from the original"),
    ("tar mtime of every member", "octal 14714250600 (the page shows it for member 0)"),
    ("tar uid/gid/uname/gname of every member", "those of member 0 (the page shows member 0)"),
    ("tar mode of the sg00/ directory", "0755 (the page shows 0644 for member 0 only)"),
    ("JSON formatting", "two-space indentation, keys sorted, no trailing newline: it "
     "reproduces the sizes the page gives for pe.json (63), sp.json (63) and dve.json (65)"),
    ("kelf-a.json", "keys in the page's order, two-space indentation, a trailing newline "
     "(129 bytes, the size the page gives)"),
    ("act.json", "the page names act_info, act_semaphore 9 and the bare keys; its size 182 "
     "means some 64 bytes of keys the page does not show, which are absent here"),
    ("neff.json", "TVM graph keys as the page lists them; TVM's list-tag spelling "
     "[\"list_shape\", ...] / [\"list_str\", ...] / [\"list_int\", ...] for attrs; node "
     "`inputs` and the head of the op node follow TVM's graph JSON; the page gives 980 bytes"),
    ("def.json", "the keys the page lists; `#transfer-type`, `#file-name`, `element_size`, "
     "`internal_shape` as shown; the page gives 1421 bytes"),
    ("pool.json dma blocks", "`queue` names the queue (R metadata-schema.md: queue / "
     "instance_name), `id` 0, one `desc` entry per block with `from`/`to` as variable names "
     "and the sizes/steps the page gives; `name` pool_array_json, `instr` pool.bin"),
    ("pe.bin bytes 0x24..0x3F", "zeros (the page: \"rest 0\")"),
    ("pool.bin slot bytes the page elides", "zeros (name NUL padding, block id 0 at +0x30, "
     "the rest of slot 2)"),
    (".asm members", "the producer lines the page quotes, one per line, each ending in a "
     "newline (pe.asm on one line although the page wraps it)"),
]


def jdump(obj, newline=False):
    s = json.dumps(obj, indent=2, sort_keys=True)
    return (s + ("\n" if newline else "")).encode()


def kelf():
    # Keys in the order the page prints them.
    s = json.dumps(
        {"graphs": [{"definition": "sg00/def.json", "name": "sg00"}], "version": "0.5", "target": "*"},
        indent=2,
    )
    return (s + "\n").encode()


def neff_json():
    return jdump(
        {
            "nodes": [
                {"op": "null", "name": "input", "is_param": "0", "inputs": []},
                {
                    "op": "tvm_op",
                    "name": "sg_tonga0",
                    "attrs": {
                        "func_name": "__kelf",
                        "kelf": "kelf-a.json",
                        "num_inputs": "1",
                        "num_outputs": "1",
                    },
                    "inputs": [[0, 0, 0]],
                    "output": "output",
                },
            ],
            "arg_nodes": [0],
            "heads": [[1, 0, 0]],
            "attrs": {
                "shape": ["list_shape", [[32], [32]]],
                "storage_id": ["list_int", [0, 1]],
                "dltype": ["list_str", ["float32", "float32"]],
            },
            "node_row_ptr": [0, 1, 2],
        }
    )


def def_json():
    return jdump(
        {
            "act": "act.json",
            "dve": "dve.json",
            "pe": "pe.json",
            "pool": "pool.json",
            "debug_info": {"wavegraph": "wavegraph-bin.json"},
            "dma_queue": {
                "q_gradient_in": {"owner": "pool", "semaphore": 10, "type": "in"},
                "q_gradient_out": {"owner": "pool", "semaphore": 11, "type": "out"},
            },
            "git_version": "",
            "name": "definition",
            "version": "0.6-",
            "replica_groups": [[]],
            "runtime_statebuffer_reservation": [],
            "var": {
                "SB": {"type": "state-buffer", "var_id": 1},
                "input": {
                    "#transfer-type": "input",
                    "type": "input",
                    "size": 128,
                    "element_size": 4,
                    "internal_shape": [1, 1, 1, 32],
                    "var_id": 0,
                },
                "output": {
                    "#transfer-type": "output",
                    "type": "output",
                    "size": 128,
                    "element_size": 4,
                    "internal_shape": [1, 1, 1, 32],
                    "#file-name": "value_nn__output:0-simout.npy",
                    "var_id": 2,
                },
                "gradient_in": {"#transfer-type": "tmp-buf", "type": "tmp-buf", "size": 128, "var_id": 3},
                "gradient_out": {"#transfer-type": "tmp-buf", "type": "tmp-buf", "size": 128, "var_id": 4},
            },
        }
    )


def engine_json(eng, extra=None):
    d = {"dma": [], "instr": f"{eng}.bin", "name": f"{eng}_array_json"}
    d.update(extra or {})
    return jdump(d)


def pool_json():
    def block(queue, src, dst):
        return {
            "queue": queue,
            "id": 0,
            "desc": [
                {
                    "from": src,
                    "to": dst,
                    "from_sizes": [128, 1],
                    "from_steps": [1, 128],
                    "to_sizes": [128, 1],
                    "to_steps": [1, 128],
                }
            ],
        }

    return engine_json(
        "pool",
        {
            "dma": [
                block("q_gradient_in", "input", "gradient_in"),
                block("q_gradient_out", "gradient_out", "output"),
            ]
        },
    )


def pe_bin():
    # concrete-carve.md §5.1, byte for byte; "rest 0".
    b = bytearray(64)
    b[0:0x24] = bytes.fromhex(
        "c8100000" "040a1316" "00000000" "040a0000" "03000000" "04000000" "20000000" "00000000" "01000000"
    )
    return bytes(b)


def pool_bin():
    # concrete-carve.md §5.2: three slots.
    def slot(head, name=b""):
        b = bytearray(64)
        b[0:8] = head
        b[0x0C:0x0C + len(name)] = name
        return bytes(b)

    return (
        slot(bytes.fromhex("c110000000000000"), b"q_gradient_in")
        + slot(bytes.fromhex("c110000004160000"), b"q_gradient_out")
        + slot(bytes.fromhex("a0100000040b0000"))
    )


PE_ASM = (
    b"PSEUDO_TRIGGER_COLLECTIVE $S[10]>0 $S[22]++@complete ctype=ALL_REDUCE "
    b"input_tensor_id=3 output_tensor_id=4 num_elements=32 dtype=fp32 op=ADD group_id=0;\n"
)
POOL_ASM = (
    b"PSEUDO_DMA_TRIGGER q_gradient_in block_id=0;\n"
    b"PSEUDO_DMA_TRIGGER $S[22]>0 q_gradient_out block_id=0;\n"
    b"EVENT_SEMAPHORE $S[11]>0;\n"
)


def members():
    """The 19 members in the page's tar order (§3); None marks the directory entry."""
    return [
        ("kelf-a.json", kelf()),
        ("neff.json", neff_json()),
        ("sg00/", None),
        ("sg00/pe.json", engine_json("pe")),
        ("sg00/def.json", def_json()),
        ("sg00/pool.bin", pool_bin()),
        ("sg00/sp.asm", b""),
        ("sg00/pe.bin", pe_bin()),
        ("sg00/dve.json", engine_json("dve")),
        ("sg00/act.json", engine_json("act", {"act_info": "act_info.json", "act_semaphore": 9})),
        ("sg00/dve.bin", b""),
        ("sg00/dve.asm", b""),
        ("sg00/act.bin", b""),
        ("sg00/sp.bin", b""),
        ("sg00/sp.json", engine_json("sp")),
        ("sg00/pool.asm", POOL_ASM),
        ("sg00/pe.asm", PE_ASM),
        ("sg00/pool.json", pool_json()),
        ("sg00/act.asm", b""),
    ]


def tar_bytes():
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tf:
        for name, data in members():
            ti = tarfile.TarInfo(name.rstrip("/"))
            ti.mtime = 0o14714250600
            ti.uid, ti.gid = 626188407, 600260513
            ti.uname, ti.gname = "imminkin", "domain^users"
            if data is None:
                ti.type = tarfile.DIRTYPE
                ti.mode = 0o755
                ti.name = name
                tf.addfile(ti)
            else:
                ti.mode = 0o644
                ti.size = len(data)
                tf.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


def gzip_bytes(raw):
    # §2: FLG 0, MTIME 0, XFL 0, OS 3 (Unix); deflate; CRC32 and ISIZE trailer.
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    body = c.compress(raw) + c.flush()
    return (
        bytes([0x1F, 0x8B, 8, 0]) + struct.pack("<I", 0) + bytes([0, 3]) + body
        + struct.pack("<II", zlib.crc32(raw) & 0xFFFFFFFF, len(raw) & 0xFFFFFFFF)
    )


def header(payload):
    h = bytearray(1024)
    struct.pack_into("<QQQQQ", h, 0, 2, 0x400, len(payload), 2, 0)
    h[0x28:0x28 + 39] = b"2.0.21884.0%kaena-tools/develop@6c66f4b"
    struct.pack_into("<I", h, 0xA8, 1)
    h[0xAC:0xBC] = hashlib.md5(payload).digest()
    h[0xBC:0xCC] = b"0" * 16
    h[0xCC:0xDC] = bytes.fromhex("561826fb125f4bb8991c29e085c8949a")
    h[0xDC] = ord("x")
    struct.pack_into("<I", h, 0x1DC, 1)
    struct.pack_into("<Q", h, 0x220, 0)
    struct.pack_into("<I", h, 0x228, 1)
    return bytes(h)


def npy_f32(values):
    hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d,), }" % len(values)
    pad = 64 - (10 + len(hdr) + 1) % 64
    hdr = (hdr + " " * pad + "\n").encode()
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr + struct.pack("<%df" % len(values), *values)


def main():
    if "--choices" in sys.argv:
        for what, choice in CHOICES:
            print(f"- {what}: {choice}")
        return
    tar = tar_bytes()
    assert len(tar) == 20480, len(tar)
    gz = gzip_bytes(tar)
    with open(os.path.join(HERE, NAME + ".neff"), "wb") as f:
        f.write(header(gz) + gz)
    values = [i + 0.5 for i in range(32)]
    with open(os.path.join(HERE, NAME + ".input.npy"), "wb") as f:
        f.write(npy_f32(values))
    os.makedirs(os.path.join(HERE, NAME + ".ref"), exist_ok=True)
    with open(os.path.join(HERE, NAME + ".ref", "output.npy"), "wb") as f:
        f.write(npy_f32(values))


if __name__ == "__main__":
    main()
