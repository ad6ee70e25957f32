#!/usr/bin/env python3
"""Generate the L1 verifier fixtures in this folder.

Each case is a clean module with exactly one rule broken. `cases.json` lists every file with the
(rule, code) pairs of the errors the verifier must report for it, taken from the seeds: the
verifier has to produce exactly that multiset of errors, nothing more (tests in
validate/tests/l1_cases.rs and cli/tests/verify_cli.rs).

Run from anywhere: python3 testdata/bir/make_cases.py
"""

import copy
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def ap(mem, buf, dtype, parts, pattern, start=0, offset=0):
    return {"mem": mem, "buffer": buf, "dtype": dtype, "start_partition": start,
            "partitions": parts, "pattern": pattern, "offset": offset}


def sb(buf, dtype, parts, elems, start=0):
    return ap("SB", buf, dtype, parts, [[1, elems]], start)


def mx():
    """A legal MatmultMx: K = 128 (32 x4 containers), scales 4:1, output 32 x 32."""
    return {
        "op": "MatmultMx", "name": "mm", "engine": "PE",
        "args": [
            sb("ifmap", "float8_e4m3fn_x4", 128, 32),
            sb("weights", "float8_e4m3fn_x4", 128, 32),
            sb("ifmap_scales", "uint8", 16, 32),
            sb("weights_scales", "uint8", 16, 32),
        ],
        "outs": [ap("PSUM", "mm_out", "float32", 32, [[1, 32]])],
        "replication_shift": 0,
    }


def clean_v4():
    return {
        "name": "clean_core_v4",
        "arch": "core_v4",
        "functions": [
            {"name": "main", "blocks": [
                {"name": "bb0", "instructions": [
                    mx(),
                    {"op": "Activation", "name": "act", "engine": "Act",
                     "args": [ap("PSUM", "mm_out", "float32", 32, [[1, 32]])],
                     "outs": [sb("act_out", "bfloat16", 32, 32)]},
                    {"op": "TensorTensor", "name": "add_in_place", "engine": "DVE",
                     "args": [sb("x", "bfloat16", 128, 512), sb("y", "bfloat16", 128, 512)],
                     "outs": [sb("x", "bfloat16", 128, 512)]},
                    {"op": "NKIKernel", "name": "nki", "engine": "Unassigned", "func": "kernel_body",
                     "sb_num_partitions": 128, "sb_per_partition_size": 1024,
                     "psum_bank_count": 2, "psum_num_partitions": 128,
                     "num_sb_buffers": 1, "num_psum_buffers": 1,
                     "args": [sb("x", "bfloat16", 128, 512)],
                     "outs": [sb("k_sb", "bfloat16", 128, 512), ap("PSUM", "k_ps", "float32", 128, [[1, 512]])]},
                    {"op": "AllGather", "name": "gather", "engine": "Pool", "replica_groups_shape": [2, 4],
                     "args": [sb("g_in", "float32", 128, 64)],
                     "outs": [sb("g_out", "float32", 128, 256)]},
                    {"op": "ReduceScatter", "name": "scatter", "engine": "Pool", "replica_groups_shape": [2, 4],
                     "args": [sb("s_in", "float32", 128, 256)],
                     "outs": [sb("s_out", "float32", 128, 64)]},
                    {"op": "SendRecv", "name": "sendrecv", "engine": "Pool", "recv_from_rank": [1],
                     "args": [sb("sr_in", "bfloat16", 128, 64)],
                     "outs": [sb("sr_out", "bfloat16", 128, 64)]},
                    {"op": "AllToAllV", "name": "a2av", "engine": "Pool",
                     "args": [sb("v_in", "bfloat16", 128, 64), sb("v_meta", "uint32", 1, 8)],
                     "outs": [sb("v_out", "bfloat16", 128, 64)]},
                    {"op": "GPSIMDSB2SB", "name": "sb2sb", "engine": "Pool", "ctx": 2,
                     "args": [sb("p_in", "bfloat16", 128, 256)],
                     "outs": [sb("p_out", "bfloat16", 128, 256)]},
                    {"op": "BIRKernel", "name": "birk", "engine": "Unassigned",
                     "args": [sb("bk_in", "float32", 64, 16)], "outs": [sb("bk_out", "float32", 64, 16)]},
                    {"op": "DynamicForLoop", "name": "loop", "engine": "ALL", "blocks": [
                        {"name": "body", "instructions": [
                            {"op": "AllReduce", "name": "local_ar", "engine": "Pool", "is_local": True,
                             "args": [sb("ar_in", "float32", 128, 64)],
                             "outs": [sb("ar_out", "float32", 128, 64)]},
                            {"op": "TensorScalar", "engine": "Pool",
                             "args": [sb("ts_in", "float16", 128, 64)], "outs": [sb("ts_out", "float16", 128, 64)]},
                        ]},
                    ]},
                    {"op": "CompareAndBranch", "engine": "SP"},
                    {"op": "Return", "engine": "ALL"},
                ]},
            ]},
            {"name": "kernel_body", "blocks": [
                {"name": "entry", "instructions": [
                    {"op": "Memset", "engine": "Pool", "outs": [sb("k_sb", "bfloat16", 128, 512)]},
                    {"op": "Return", "engine": "ALL"},
                ]},
            ]},
        ],
    }


def clean_sunda():
    return {
        "name": "clean_sunda",
        "arch": "sunda",
        "functions": [{"name": "main", "blocks": [{"name": "bb0", "instructions": [
            {"op": "CustomOp", "name": "custom", "engine": "Pool",
             "args": [sb("c_in", "float32", 128, 64), ap("Input", "model_in", "float32", 1, [[1, 64]])],
             "outs": [sb("c_out", "float32", 128, 64)]},
            {"op": "Rng", "engine": "DVE", "outs": [sb("rand", "uint32", 128, 16)]},
            {"op": "Matmult", "engine": "PE",
             "args": [sb("w", "bfloat16", 128, 128), sb("i", "bfloat16", 128, 64)],
             "outs": [ap("PSUM", "acc", "float32", 128, [[1, 64]])]},
            {"op": "Generic", "engine": "SP"},
        ]}]}],
    }


CASES = []


def case(name, base, mutate, expect):
    """Register a case: `mutate(doc)` breaks one rule; `expect` lists (rule, code) errors."""
    doc = copy.deepcopy(base)
    mutate(doc)
    doc["name"] = name
    CASES.append((name, doc, expect))


def inst(doc, name, func=0):
    """The instruction called `name` (searching regions too)."""
    def walk(blocks):
        for b in blocks:
            for i in b["instructions"]:
                if i.get("name") == name:
                    return i
                found = walk(i.get("blocks", []))
                if found is not None:
                    return found
        return None
    return walk(doc["functions"][func]["blocks"])


def main_block(doc):
    return doc["functions"][0]["blocks"][0]["instructions"]


def build():
    v4, su = clean_v4(), clean_sunda()
    case("clean_core_v4", v4, lambda d: None, [])
    case("clean_sunda", su, lambda d: None, [])

    # --- shared helpers -----------------------------------------------------------------
    case("engines_400", v4, lambda d: inst(d, "add_in_place").update(engine="PE"),
         [("checkValidEngines", 400)])

    def skip(d):
        inst(d, "add_in_place").update(engine="PE")
        d["functions"][0]["attrs"] = {"skip_engine_check": True}
    case("engines_skip_attribute", v4, skip, [])
    case("engines_seed_pool_on_pool_400", v4,
         lambda d: main_block(d).insert(0, {"op": "Pool", "engine": "Pool",
                                            "args": [sb("pl_in", "bfloat16", 128, 8)],
                                            "outs": [sb("pl_out", "bfloat16", 128, 4)]}),
         [("checkValidEngines", 400)])
    case("arch_366_mx_on_gen3", v4, lambda d: d.update(
        arch="gen3", functions=[{"name": "main", "blocks": [{"name": "bb0", "instructions": [mx()]}]}]),
         [("checkArchLevel", 366)])
    case("arch_367_tonga_op_on_sunda", su,
         lambda d: main_block(d).append({"op": "TongaReduceMacroSymbolic", "engine": "Pool"}),
         [("checkArchLevel", 367)])
    case("arch_366_generic_on_inferentia", su, lambda d: d.update(
        arch="inferentia",
        functions=[{"name": "main", "blocks": [{"name": "bb0", "instructions": [{"op": "Generic", "engine": "SP"}]}]}]),
         [("checkArchLevel", 366)])
    case("memtype_310", v4, lambda d: inst(d, "add_in_place")["args"][1].update(mem="DRAM"),
         [("checkMemType", 310)])
    case("partition_over_128", v4, lambda d: inst(d, "act")["outs"][0].update(start_partition=100),
         [("checkLegalPartitionAccess", None)])
    case("datatype_int64_on_dve", v4, lambda d: inst(d, "add_in_place")["args"][1].update(dtype="int64"),
         [("checkDataType", None)])
    case("fp8_legacy_and_ocp_mixed", v4,
         lambda d: inst(d, "act")["outs"][0].update(dtype="float8_e4m3"),
         # mm's ifmap is OCP float8_e4m3fn_x4; act then writes legacy float8_e4m3.
         [("checkFP8TypeConsistency", None)])


def main():
    build()
    manifest = []
    for name, doc, expect in CASES:
        fname = name + ".bir.json"
        with open(os.path.join(HERE, fname), "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
        manifest.append({"file": fname, "errors": [{"rule": r, "code": c} for r, c in expect]})
    with open(os.path.join(HERE, "cases.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
