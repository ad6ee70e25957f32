#!/usr/bin/env python3
"""Generate the L1 verifier fixtures in this folder.

Each case is a clean module with exactly one rule broken. `cases.json` lists every file with the
(rule, code) pairs of the errors the verifier must report for it, taken from the seeds: the
verifier has to produce exactly that multiset of errors, nothing more (tests in
validate/tests/it/l1_cases.rs and cli/tests/it/verify_cli.rs).

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
    case("enum_arch_abs_max_on_sunda", su,
         lambda d: main_block(d).append({"op": "TensorTensor", "engine": "DVE",
                                         "args": [sb("ea", "bfloat16", 128, 8), sb("eb", "bfloat16", 128, 8)],
                                         "outs": [sb("ec", "bfloat16", 128, 8)],
                                         "attrs": {"op": "ABS_MAX"}}),
         # ALU_OP ABS_MAX (0x20) exists from core_v4 on.
         [("checkArchLevelForEnum", None)])
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

    # --- MatmultMx: the 18 asserts, one at a time -------------------------------------
    def mx_case(name, mutate, expect):
        case(name, v4, lambda d: mutate(inst(d, "mm")), expect)

    def elems(ap, n):
        ap["pattern"][0][1] = n

    mx_case("mx_228_ifmap_scale_ratio", lambda m: elems(m["args"][2], 31), [("checkMatmultMxInputs", 228)])
    mx_case("mx_229_weights_scale_ratio", lambda m: elems(m["args"][3], 31), [("checkMatmultMxInputs", 229)])
    mx_case("mx_230_ifmap_scale_upper_half", lambda m: m["args"][2].update(start_partition=16),
            [("checkMatmultMxInputs", 230)])
    mx_case("mx_231_weights_scale_upper_half", lambda m: m["args"][3].update(start_partition=20),
            [("checkMatmultMxInputs", 231)])

    def k_beyond_bank(m):
        # 4097 containers = 16388 > 32 x 2048 B / 4 B; scales and output follow so only #5 breaks.
        for ap in (m["args"][0], m["args"][2], m["outs"][0]):
            elems(ap, 4097)
    mx_case("mx_232_ifmap_beyond_psum_bank", k_beyond_bank, [("checkMatmultMxInputs", 232)])

    def k_over_512(m):
        # K = 520: assert #10 then needs 130 output partitions, beyond the 128 of PSUM.
        elems(m["args"][1], 130)
        elems(m["args"][3], 130)
        m["outs"][0]["partitions"] = 130
    mx_case("mx_233_weights_k_over_512", k_over_512,
            [("checkMatmultMxInputs", 233), ("checkLegalPartitionAccess", None)])

    def odd_blocks(m):
        elems(m["args"][1], 33)
        elems(m["args"][3], 33)
        m["outs"][0]["partitions"] = 33
    mx_case("mx_289_odd_x4_blocks", odd_blocks, [("checkMatmultMxInputs", 289)])

    def parts48(m):
        m["args"][0]["partitions"] = 48
        m["args"][1]["partitions"] = 48
    mx_case("mx_234_partitions_not_pow2_tile", parts48, [("checkMatmultMxInputs", 234)])
    mx_case("mx_235_partition_mismatch", lambda m: m["args"][1].update(partitions=64), [("checkMatmultMxInputs", 235)])
    mx_case("mx_236_output_partitions", lambda m: m["outs"][0].update(partitions=31), [("checkMatmultMxInputs", 236)])
    mx_case("mx_237_output_elements", lambda m: elems(m["outs"][0], 31), [("checkMatmultMxInputs", 237)])
    mx_case("mx_205_not_on_pe", lambda m: m.update(engine="Unassigned"), [("checkMatmultMxInstruction", 205)])
    mx_case("mx_212_ifmap_scale_other_quadrant", lambda m: m["args"][2].update(start_partition=32),
            [("checkMatmultMxInstruction", 212)])
    mx_case("mx_213_weights_scale_other_quadrant", lambda m: m["args"][3].update(start_partition=64),
            [("checkMatmultMxInstruction", 213)])
    mx_case("mx_214_scale_not_4_aligned", lambda m: m["args"][2].update(start_partition=2),
            [("checkMatmultMxInstruction", 214)])
    mx_case("mx_241_column_tiled", lambda m: m.update(
        tiles={"row_pos": [0], "col_pos": [0], "row_size": [128], "col_size": [64]}),
            [("checkMatmultMxInstruction", 241)])
    mx_case("mx_240_row_sub_tiled", lambda m: m.update(
        tiles={"row_pos": [0], "col_pos": [-1], "row_size": [64], "col_size": [-1]}),
            [("checkMatmultMxInstruction", 240)])
    mx_case("mx_204_replication_shift", lambda m: m.update(replication_shift=1), [("checkMatmultMxInstruction", 204)])

    # --- kernels and CustomOp ------------------------------------------------------------
    case("customop_178_on_core_v4", su, lambda d: d.update(arch="core_v4"), [("checkCustomOp", 178)])
    case("customop_178_on_gen3", su, lambda d: d.update(arch="gen3"), [("checkCustomOp", 178)])
    case("nki_1680_sb_shape", v4, lambda d: inst(d, "nki").update(sb_num_partitions=0),
         [("checkNKIKernelBufferShapes", 1680)])
    case("nki_1681_psum_banks", v4, lambda d: inst(d, "nki").update(psum_bank_count=9),
         [("checkNKIKernelBufferShapes", 1681)])
    case("nki_1682_psum_partitions", v4, lambda d: inst(d, "nki").update(psum_num_partitions=129),
         [("checkNKIKernelBufferShapes", 1682)])
    case("nki_1683_outputs", v4, lambda d: inst(d, "nki").update(num_psum_buffers=2),
         [("checkNKIKernelBufferShapes", 1683)])
    case("nki_function_missing", v4, lambda d: inst(d, "nki").update(func="no_such_function"),
         [("checkNKIKernelFunction", None)])
    case("birkernel_base_partition", v4, lambda d: inst(d, "birk")["outs"][0].update(start_partition=32),
         [("checkBIRKernel", None)])

    # --- collectives --------------------------------------------------------------------
    case("allgather_ratio", v4, lambda d: elems(inst(d, "gather")["outs"][0], 128),
         [("checkCollectiveCompute", None)])
    case("reducescatter_ratio", v4, lambda d: elems(inst(d, "scatter")["outs"][0], 128),
         [("checkCollectiveCompute", None)])
    case("collective_371_on_sunda", su, lambda d: main_block(d).append(
        {"op": "AllReduce", "engine": "Pool", "args": [sb("ar_in", "float32", 128, 64)],
         "outs": [sb("ar_out", "float32", 128, 64)]}),
         [("checkCollectiveCompute", 371)])
    case("collective_318_two_outputs", v4, lambda d: inst(d, "gather")["outs"].append(sb("g_extra", "float32", 128, 256)),
         [("checkCollectiveCompute", 318)])
    case("collective_311_alltoallv_on_gen3", v4, lambda d: d.update(
        arch="gen3", functions=[{"name": "main", "blocks": [{"name": "bb0", "instructions": [inst(d, "a2av")]}]}]),
         [("checkCollectiveCompute", 311)])
    case("collective_312_not_partition_contiguous", v4,
         lambda d: inst(d, "gather")["args"][0].update(pattern=[[2, 64]]),
         [("checkCollectiveCompute", 312)])
    case("collective_313_input_in_dram", v4, lambda d: inst(d, "gather")["args"][0].update(mem="DRAM"),
         [("checkCollectiveCompute", 313)])
    case("sendrecv_74_ranks", v4, lambda d: inst(d, "sendrecv").update(recv_from_rank=[]),
         [("checkCollectiveCompute", 74)])
    case("sendrecv_75_dtypes", v4, lambda d: inst(d, "sendrecv")["outs"][0].update(dtype="float16"),
         [("checkCollectiveCompute", 75)])
    case("alltoallv_metadata_dtype", v4, lambda d: inst(d, "a2av")["args"][1].update(dtype="int32"),
         [("checkCollectiveCompute", None)])
    case("collective_send_reads_io", v4, lambda d: main_block(d).insert(0, {
        "op": "CollectiveSend", "engine": "Pool", "args": [ap("Input", "model_in", "float32", 1, [[1, 64]])]}),
         [("checkCollective", None)])
    case("dynamic_cfg_123_not_local", v4, lambda d: inst(d, "local_ar").update(is_local=False),
         [("checkCollectivesInDynamicCFG", 123)])
    case("dynamic_cfg_1500_sendrecv", v4, lambda d: inst(d, "loop")["blocks"][0]["instructions"].append(
        {"op": "SendRecv", "engine": "Pool", "is_local": True, "recv_from_rank": [1],
         "args": [sb("dsr_in", "bfloat16", 128, 64)], "outs": [sb("dsr_out", "bfloat16", 128, 64)]}),
         [("checkCollectivesInDynamicCFG", 1500)])

    # --- GPSIMD SB2SB ---------------------------------------------------------------------
    def sb2sb_case(name, mutate, expect, base=v4):
        case(name, base, lambda d: mutate(d, inst(d, "sb2sb")), expect)

    def gate71(d, i):
        i.update(engine="DVE")
        d["functions"][0]["attrs"] = {"skip_engine_check": True}
    sb2sb_case("sb2sb_verify_71_engine", gate71, [("GPSIMDSB2SB::verify", None)])
    sb2sb_case("sb2sb_verify_74_no_output", lambda d, i: i.update(outs=[]), [("GPSIMDSB2SB::verify", None)])
    sb2sb_case("sb2sb_c1_ctx", lambda d, i: i.update(ctx=3), [("isCompatible", None)])
    sb2sb_case("sb2sb_c2_before_gen3", lambda d, i: d.update(
        arch="sunda", functions=[{"name": "main", "blocks": [{"name": "bb0", "instructions": [i]}]}]),
        # The class's opcode (0xBF) is gen3+, so the arch gate agrees with C2.
        [("checkArchLevel", 366), ("isCompatible", None)])
    sb2sb_case("sb2sb_c3_dtype", lambda d, i: i["outs"][0].update(dtype="float16"), [("isCompatible", None)])
    sb2sb_case("sb2sb_c4_bytes_per_partition", lambda d, i: elems(i["outs"][0], 128), [("isCompatible", None)])

    def six_dims(d, i):
        for a in (i["args"][0], i["outs"][0]):
            a["pattern"] = [[256, 1], [256, 1], [256, 1], [256, 1], [1, 256]]
    sb2sb_case("sb2sb_c5_dims", six_dims, [("isCompatible", None)])
    sb2sb_case("sb2sb_c6_not_sb", lambda d, i: i["outs"][0].update(mem="PSUM"), [("isCompatible", None)])
    sb2sb_case("sb2sb_c7_indirect", lambda d, i: i["args"][0].update(indirect=True), [("isCompatible", None)])

    def over_budget(d, i):
        elems(i["args"][0], 512)
        elems(i["outs"][0], 512)
    sb2sb_case("sb2sb_c8_effective_bytes", over_budget, [("isCompatible", None)])

    # --- write in place -------------------------------------------------------------------
    case("wip_shifted_overlap", v4, lambda d: inst(d, "add_in_place")["outs"][0].update(offset=1),
         [("checkWriteInPlaceValidity", None)])
    case("wip_transpose", v4, lambda d: main_block(d).insert(0, {
        "op": "StreamTranspose", "engine": "Pool",
        "args": [sb("t", "bfloat16", 128, 64)], "outs": [sb("t", "bfloat16", 128, 64)]}),
         [("checkWriteInPlaceValidity", None)])
    case("wip_pe_replication", v4, lambda d: main_block(d).insert(0, {
        "op": "Generic", "engine": "PE",
        "args": [sb("g", "bfloat16", 128, 64)], "outs": [ap("SB", "g", "bfloat16", 128, [[1, 64]], offset=8)]}),
         [("checkWriteInPlaceValidity", None)])
    case("wip_bnstats_aggregate_legal", v4, lambda d: main_block(d).insert(0, {
        "op": "BNStatsAggregate", "engine": "DVE",
        "args": [sb("bn", "float32", 128, 64)], "outs": [ap("SB", "bn", "float32", 128, [[1, 6]], offset=2)]}),
         [])
    case("wip_interleaved_legal", v4, lambda d: main_block(d).insert(0, {
        "op": "TensorCopy", "engine": "DVE",
        "args": [ap("SB", "il", "bfloat16", 128, [[2, 32]])], "outs": [ap("SB", "il", "bfloat16", 128, [[2, 32]], offset=1)]}),
         [])

    # --- modes ------------------------------------------------------------------------------
    def two(d):
        inst(d, "add_in_place").update(engine="PE")
        inst(d, "act")["outs"][0].update(mem="DRAM")
    case("two_errors", v4, two, [("checkMemType", 310), ("checkValidEngines", 400)])


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
