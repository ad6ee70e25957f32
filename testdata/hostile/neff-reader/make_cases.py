#!/usr/bin/env python3
"""Hostile NEFFs for the readers: stray or unreachable streams, out-of-range ids and
semaphores, dangling member names, mismatched constants, unknown targets and keys that change
results. Python standard library only; every NEFF is a bare tar (no header), which tpbsim reads
like a headered one. Writes the *.neff files and cases.json next to this script:

    python3 testdata/hostile/neff-reader/make_cases.py

Each case runs `sim` with "args" ("{case}" = this directory, "{out}" = a fresh output
directory) and expects the exit code "exit" and the substring "stderr" in its error output.
"""

import copy
import gzip
import importlib.util
import io
import json
import os
import struct
import sys
import tarfile

sys.dont_write_bytecode = True

HERE = os.path.dirname(os.path.abspath(__file__))
CARVE = os.path.join(HERE, "..", "..", "real", "make_concrete_carve.py")

spec = importlib.util.spec_from_file_location("carve", CARVE)
carve = importlib.util.module_from_spec(spec)
spec.loader.exec_module(carve)


def tar(members):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tf:
        for name, data in members.items():
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


def base():
    """The concrete-carve members (runtime layout), as a dict."""
    return {n: d for n, d in carve.members() if d is not None}


def js(obj):
    return json.dumps(obj, indent=1).encode()


def edit(members, member, fn):
    v = json.loads(members[member])
    fn(v)
    members[member] = js(v)
    return members


def npy(descr, shape, payload):
    hdr = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape)
    pad = 64 - (10 + len(hdr) + 1) % 64
    hdr = (hdr + " " * pad + "\n").encode()
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr + payload


class Pairs(list):
    """A JSON object written from its (key, value) pairs in order: the same key may repeat."""


def js_pairs(v):
    """JSON text of `v`, where a `Pairs` is an object that may repeat a key."""
    if isinstance(v, Pairs):
        return "{" + ", ".join(json.dumps(k) + ": " + js_pairs(x) for k, x in v) + "}"
    if isinstance(v, dict):
        return js_pairs(Pairs(v.items()))
    if isinstance(v, list):
        return "[" + ", ".join(js_pairs(x) for x in v) + "]"
    return json.dumps(v)


def repeat_key(members, member, path, key, value):
    """`member` with `key` given a second time (`value`) in the object at `path`."""
    v = json.loads(members[member])
    obj = v
    for p in path:
        obj = obj[p]
    pairs = Pairs(obj.items())
    pairs.append((key, value))
    if path:
        parent = v
        for p in path[:-1]:
            parent = parent[p]
        parent[path[-1]] = pairs
    else:
        v = pairs
    members[member] = js_pairs(v).encode()
    return members


NOP = bytes([0xA4, 0x10]) + bytes(62)
OLD_DEF = {
    "definition": {"sp": {"_instr": "SP.bin"}},
    "var": [{"var_id": 1, "name": "out", "type": "output", "size": 4}],
}

CASES = []


def case(name, members, args, exit_code, stderr, gz=False):
    path = os.path.join(HERE, name + ".neff")
    data = tar(members)
    with open(path, "wb") as f:
        # A tar with no member has no ustar magic to be recognised by: gzip it.
        f.write(gzip.compress(data, mtime=0) if gz else data)
    args = [a.replace("NEFF", "{case}/" + name + ".neff") for a in args]
    CASES.append({"name": name, "args": args, "exit": exit_code, "stderr": stderr})


def validate():
    return ["validate", "--arch", "v2", "NEFF"]


def run():
    return ["run", "--arch", "v2", "NEFF", "--out-dir", "{out}", "--input", "input={case}/input.npy"]


def main():
    # Streams no def.json reaches.
    case("root_pe_bin", {"neff.json": b"{}", "PE.bin": NOP}, validate(), 2,
         "stream-like member(s) ignored")
    case("lone_dve_instr", {"sg00/dve_instr": NOP}, validate(), 2,
         "no def.json reaches them")
    old = {"sg00/def.json": js(OLD_DEF), "sg00/SP.bin": NOP}
    case("garbage_sg01_beside_sg00", dict(old, **{"sg01/PE.bin": bytes(range(100))}), validate(), 2,
         "sg01/PE.bin")
    case("empty_archive", {}, validate(), 2, "the archive is empty", gz=True)
    case("def_without_streams", {"sg00/def.json": js({"var": OLD_DEF["var"]})}, validate(), 2,
         "names no engine stream")
    case("stream_not_whole_bundles", dict(old, **{"sg00/SP.bin": NOP + b"\x00"}), validate(), 2,
         "not a multiple of 64")
    bad = copy.deepcopy(OLD_DEF)
    bad["definition"]["sp"]["_instr"] = "nope.bin"
    case("instr_names_missing_member", {"sg00/def.json": js(bad), "sg00/SP.bin": NOP}, validate(), 2,
         "missing member `sg00/nope.bin`")

    # Ranges checked at their real width, with the JSON path.
    m = edit(base(), "sg00/def.json", lambda d: d["var"]["gradient_in"].update(var_id=2**32 + 3))
    case("var_id_above_u32", m, run(), 2, "var.gradient_in.var_id")
    m = edit(base(), "sg00/def.json", lambda d: d["dma_queue"]["q_gradient_in"].update(semaphore=257))
    case("queue_semaphore_257", m, run(), 2, "dma_queue.q_gradient_in.semaphore")
    m = edit(base(), "sg00/pool.json",
             lambda d: d["dma"][0]["desc"][0].update(sem=3, sem_op="add", sem_value=2**40))
    case("sem_value_above_u32", m, run(), 2, "dma[0].desc[0].sem_value")
    m = edit(base(), "sg00/pool.json", lambda d: d["dma"][0]["desc"][0].update(sem=300))
    case("desc_semaphore_300", m, run(), 2, "dma[0].desc[0].sem")
    m = edit(base(), "sg00/pool.json", lambda d: d["dma"][0]["desc"][0].update(to_steps=[1, 129]))
    m = edit(m, "sg00/pool.json", lambda d: d["dma"][0]["desc"][0].update(to_sizes=[64, 2], from_sizes=[64, 2], from_steps=[1, 64]))
    case("dma_side_past_its_variable", m, run(), 2, "reaches byte 193 of `gradient_in`")
    m = edit(base(), "sg00/pool.json", lambda d: d["dma"][0]["desc"][0].update(from_steps=[-1, 128]))
    case("dma_side_before_its_variable", m, run(), 2, "before `input`")

    # Constants that disagree with their variable.
    def with_const(payload_npy):
        m = base()
        m["sg00/w.npy"] = payload_npy
        return edit(m, "sg00/def.json", lambda d: d["var"].update(
            w={"type": "file", "var_id": 5, "file_name": "w.npy", "dtype": "float32", "shape": [4, 8], "size": 128}))
    case("npy_shape_mismatch", with_const(npy("<f4", "(32,)", bytes(128))), run(), 2, "shape")
    case("npy_trailing_bytes", with_const(npy("<f4", "(4, 8)", bytes(132))), run(), 2, "132 bytes")

    # Manifests.
    m = base()
    del m["kelf-a.json"]
    case("kelf_member_missing", m, run(), 2, "missing member `kelf-a.json`")
    m = edit(base(), "kelf-a.json", lambda d: d.update(target="zzz"))
    case("kelf_target_unknown", m, ["run", "NEFF", "--out-dir", "{out}"], 2, "unknown target `zzz`")
    case("kelf_target_any_needs_arch", base(), ["run", "NEFF", "--out-dir", "{out}"], 2, "pass --arch")
    m = edit(base(), "neff.json", lambda d: d["nodes"][1]["attrs"].update(func_name="tvm_kernel"))
    case("no_kelf_node", m, run(), 2, "__kelf")

    # A key given twice in one object is refused, not read as its last value.
    tmp = {"type": "tmp-buf", "var_id": 7, "size": 128}
    m = repeat_key(base(), "sg00/def.json", ["var"], "output", tmp)
    case("def_var_output_twice", m, run(), 2, "duplicate key `output` in one object")
    m = repeat_key(base(), "kelf-a.json", [], "target", "sunda")
    case("kelf_target_twice", m, ["run", "NEFF", "--out-dir", "{out}"], 2, "duplicate key `target` in one object")
    q = json.loads(base()["sg00/def.json"])["dma_queue"]
    first = sorted(q)[0]
    m = repeat_key(base(), "sg00/def.json", ["dma_queue"], first, q[first])
    case("def_dma_queue_twice", m, run(), 2, f"duplicate key `{first}` in one object")
    # A definition listed twice (it would be loaded twice) is refused.
    m = edit(base(), "kelf-a.json", lambda d: d["graphs"].append(dict(d["graphs"][0])))
    case("kelf_definition_twice", m, ["run", "NEFF", "--arch", "v2", "--out-dir", "{out}"], 2,
         "`sg00/def.json` is listed already by graphs[0]")
    m = edit(base(), "kelf-a.json", lambda d: d.update(graphs=d["graphs"] * 100000))
    case("kelf_definition_100000_times", m, ["validate", "--arch", "v2", "NEFF"], 2,
         "graphs[1].definition", gz=True)
    # Target names are exact: no trimming, no case folding.
    for label, name in [("space", " cayman"), ("upper", "V3 "), ("case", "Cayman")]:
        m = edit(base(), "kelf-a.json", lambda d, name=name: d.update(target=name))
        case(f"kelf_target_{label}", m, ["run", "NEFF", "--out-dir", "{out}"], 2, f"unknown target `{name}`")

    # Keys that change results are refused, not ignored.
    m = edit(base(), "sg00/pool.json", lambda d: d["dma"][0]["desc"][0].update(scale=2.0, scale_dtype="float32"))
    case("desc_scale_not_simulated", m, run(), 2, "not simulated: dma[0].desc[0].scale")
    m = edit(base(), "sg00/def.json", lambda d: d.update(replica_groups=[[0, 1]]))
    # The world the NEFF's groups span cannot be run with fewer ranks.
    case("two_rank_collective", m, run() + ["--ranks", "1"], 2, "span 2 ranks")
    m = edit(base(), "sg00/pool.json", lambda d: d["dma"][0]["desc"][0].update(op="fma"))
    case("desc_op_fma_not_simulated", m, run(), 2, "not simulated: dma[0].desc[0].op")

    with open(os.path.join(HERE, "input.npy"), "wb") as f:
        f.write(carve.npy_f32([i + 0.5 for i in range(32)]))
    with open(os.path.join(HERE, "cases.json"), "w") as f:
        json.dump(CASES, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
