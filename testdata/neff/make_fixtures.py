#!/usr/bin/env python3
"""Regenerate the NEFF and .npy fixtures in this directory.

Needs numpy and ml_dtypes (only to regenerate; the tests read the committed files).

kernel/   a NEFF source directory: neff.json, sg00/def.json, two engine streams (PE under its
          file name, ACT under its tar token), their DMA sidecars, and an int8 constant.
npy/      arrays written by numpy itself (standard dtypes, big-endian Fortran order, and
          ml_dtypes' bfloat16 / float8 types), with expected.json giving each file's descr,
          shape and little-endian C-order bytes.
"""
import json
import os

import ml_dtypes
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    mode = "wb" if isinstance(data, bytes) else "w"
    with open(path, mode) as f:
        f.write(data)


def bundles(engine_id, n):
    # 64-byte bundles whose bytes encode engine and index (not real instructions).
    return bytes((engine_id * 31 + (i // 64) * 7 + i % 13) % 256 for i in range(64 * n))


def kernel():
    root = os.path.join(HERE, "kernel")
    write(os.path.join(root, "neff.json"),
          json.dumps({"revision": "0.5", "target_arch": "cayman", "graphs": {}}, indent=1) + "\n")
    sg = os.path.join(root, "sg00")
    definition = {
        "definition": {"pe": {"_instr": "PE.bin"}},
        "var": [
            {"var_id": 0, "name": "in0", "type": "input", "size": 64, "dtype": "bfloat16", "shape": [4, 8]},
            {"var_id": 1, "name": "out0", "type": "output", "size": 128, "dtype": "float32", "shape": [4, 8]},
            {"var_id": 2, "name": "w", "type": "file", "size": 16, "dtype": "int8", "shape": [2, 8],
             "file_name": "w.npy"},
            {"var_id": 3, "name": "scratch", "type": "tmp-buf", "size": 4096},
        ],
        "dma_queue": [
            {"name": "in", "id": 0, "owner": "in", "semaphore": 1},
            {"name": "data", "id": 1, "owner": "data", "semaphore_set": [2, 3]},
        ],
    }
    write(os.path.join(sg, "def.json"), json.dumps(definition, indent=1) + "\n")
    write(os.path.join(sg, "PE.bin"), bundles(0, 2))
    write(os.path.join(sg, "act_instr"), bundles(1, 3))
    pe = {"dma": [{"queue": "in", "id": 0, "desc": [
        {"id": 0, "from": "in0", "to": "scratch", "from_sizes": [4, 8], "to_sizes": [32],
         "to_dtype": "bfloat16", "sem": 1},
        {"id": 1, "op": "cast", "from": 0, "to": "out0", "from_sizes": [32], "to_sizes": [4, 8],
         "sem": 1, "sem_op": "add", "sem_value": 2},
    ]}]}
    write(os.path.join(sg, "PE.json"), json.dumps(pe, indent=1) + "\n")
    act = {"dma": [{"queue": "data", "desc": [
        {"id": 0, "from": "w", "to": "scratch", "from_sizes": [16], "to_sizes": [16], "to_offset": 64,
         "event": 5},
    ]}]}
    write(os.path.join(sg, "act"), json.dumps(act, indent=1) + "\n")
    np.save(os.path.join(sg, "w.npy"), (np.arange(16, dtype=np.int16) * 17 - 100).astype(np.int8).reshape(2, 8))


def npy_files():
    out = os.path.join(HERE, "npy")
    os.makedirs(out, exist_ok=True)
    arrays = {
        "u8.npy": np.arange(6, dtype=np.uint8).reshape(2, 3),
        "i4.npy": np.array([-1, 2, -3], dtype="<i4"),
        "f2.npy": np.array([1.5, -2.0], dtype=np.float16),
        "f4.npy": np.linspace(-1, 1, 4, dtype=np.float32).reshape(2, 2),
        "bool.npy": np.array([True, False, True]),
        "i2_big_fortran.npy": np.asfortranarray(np.arange(6, dtype=">i2").reshape(2, 3)),
        "u8_scalar.npy": np.array(7, dtype="<u8"),
        "bf16_ml_dtypes.npy": np.array([[1.0, -2.0, 0.5], [3.0, 0.0, -0.25]], dtype=ml_dtypes.bfloat16),
        "e4m3fn_ml_dtypes.npy": np.array([1.0, -2.0, 448.0], dtype=ml_dtypes.float8_e4m3fn),
        "e5m2_ml_dtypes.npy": np.array([1.0, -2.0, 0.5, 3.0], dtype=ml_dtypes.float8_e5m2),
    }
    expected = {}
    for name, arr in arrays.items():
        np.save(os.path.join(out, name), arr)
        c = np.ascontiguousarray(arr)
        raw = c.astype(c.dtype.newbyteorder("<")).tobytes() if c.dtype.kind in "iuf" and c.dtype.itemsize > 1 \
            else c.tobytes()
        with open(os.path.join(out, name), "rb") as f:
            head = f.read(200)
        descr = head.split(b"'descr': '")[1].split(b"'")[0].decode()
        expected[name] = {"descr": descr, "shape": list(arr.shape), "hex": raw.hex()}
    write(os.path.join(out, "expected.json"), json.dumps(expected, indent=1, sort_keys=True) + "\n")
    print("numpy", np.__version__, "ml_dtypes", ml_dtypes.__version__)


if __name__ == "__main__":
    kernel()
    npy_files()
