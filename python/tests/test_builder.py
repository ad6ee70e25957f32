"""The four examples/ kernels rebuilt with tpbsim.Kernel and compared with numpy; the builder's
errors; faults raised from built kernels."""

import ml_dtypes
import numpy as np
import pytest

import tpbsim

F32 = np.float32


def dve_affine(x):
    k = tpbsim.Kernel(arch="v3")
    xin = k.input("x", x.shape, F32)
    out = k.output("out", x.shape, F32)
    a = k.sbuf(partitions=(0, 128), offset=0x0, shape=(512,), dtype=F32)
    b = k.sbuf(partitions=(0, 128), offset=0x1000, shape=(512,), dtype=F32)
    load = k.dma("in", a, xin, signal="x_in")
    store = k.dma("out", out, b)
    k.sp.pseudo_dmatrigger(queue_name="in", block_id=load)
    k.dve.tensor_scalar_arith_op(
        wait=("x_in", 1), signal="done", src=a, dst=b, in_dtype="FP32", out_dtype="FP32",
        num_active_partitions=128, op0="MULT", imm0=2.5, op1="ADD", imm1=1.0,
    )
    k.sp.pseudo_dmatrigger(wait=("done", 1), queue_name="out", block_id=store)
    return k


def test_dve_affine():
    x = np.random.default_rng(1).standard_normal((128, 512)).astype(F32)
    k = dve_affine(x)
    r = tpbsim.run(k, {"x": x})
    assert r.outputs["out"].tobytes() == (x * F32(2.5) + F32(1.0)).tobytes()
    # The same kernel as saved bytes, validated, with the race check.
    assert not [d for d in tpbsim.validate(k) if d.severity == "error"]
    assert tpbsim.run(k.neff(), {"x": x}, check_races=True).findings == []


def test_act_bias_accumulate():
    x = np.random.default_rng(2).standard_normal((128, 512)).astype(F32)
    k = tpbsim.Kernel("v3")
    xin = k.input("x", x.shape, F32)
    y = k.output("y", x.shape, F32)
    s = k.output("s", (128, 1), F32)
    a = k.sbuf(128, 0x0, (512,), F32)
    b = k.sbuf(128, 0x1000, (512,), F32)
    acc = k.sbuf(128, 0x2000, (1,), F32)
    load = k.dma("in", a, xin, signal="x_in")
    store = k.dma("out", [y, s], [b, acc])
    k.sp.pseudo_dmatrigger(queue_name="in", block_id=load)
    k.act.activate(
        wait=("x_in", 1), accumulator_cmd="ZERO_ACCUMULATE", bias_src_n="INSTRUCTION",
        src=a, dst=b, in_bias_dtypes="FP32|FP32", out_dtype="FP32",
        num_active_partitions=128, activation_func="EXP", scale_value=0.5, bias=-1.0,
    )
    k.act.activation_read_accumulator(
        signal="done", dst_element_count=1, dtype="FP32", num_active_partitions=128, dst=acc,
    )
    k.sp.pseudo_dmatrigger(wait=("done", 1), queue_name="out", block_id=store)
    r = tpbsim.run(k, {"x": x})
    want = np.exp(F32(0.5) * x - F32(1.0), dtype=F32)
    np.testing.assert_allclose(r.outputs["y"], want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(
        r.outputs["s"], want.sum(axis=1, keepdims=True, dtype=F32), rtol=1e-5, atol=1e-4
    )


def test_pe_matmul_psum():
    rng = np.random.default_rng(3)
    w = rng.standard_normal((256, 128)).astype(ml_dtypes.bfloat16)
    x = rng.standard_normal((256, 128)).astype(ml_dtypes.bfloat16)
    bf = ml_dtypes.bfloat16
    k = tpbsim.Kernel("v3")
    win = k.input("w", w.shape, bf)
    xin = k.input("x", x.shape, bf)
    out = k.output("out", (128, 128), F32)
    w0, w1 = k.sbuf(128, 0x0, (128,), bf), k.sbuf(128, 0x100, (128,), bf)
    x0, x1 = k.sbuf(128, 0x400, (128,), bf), k.sbuf(128, 0x500, (128,), bf)
    ps = k.psum(128, 0x0, (128,), F32)
    res = k.sbuf(128, 0x1000, (128,), F32)
    load = k.dma("in", [w0, w1, x0, x1], [win[:128], win[128:], xin[:128], xin[128:]],
                 signal="loaded")
    store = k.dma("out", out, res)
    k.sp.pseudo_dmatrigger(queue_name="in", block_id=load)
    common = dict(in_dtype="BF16", num_active_rows=128, num_active_cols=128, row_grp=15,
                  col_grp=15)
    # LdWeights reads each partition's weights last to first, as the compiler does: the j-th
    # element read lands in PE column 127 - j, so column c (PSUM partition c) holds w[:, c].
    assert str(w0.reversed()) == "[0xfe step=-1,0,-32 num=32,1,4]"
    k.pe.ldweights(wait=("loaded", 4), src=w0.reversed(), **common)
    k.pe.matmul(src=x0, dst=ps, out_dtype="FP32", psum_accumulate_flags="{begin=1}", **common)
    k.pe.ldweights(src=w1.reversed(), **common)
    k.pe.matmul(signal="mm", src=x1, dst=ps, out_dtype="FP32",
                psum_accumulate_flags="{end=1}", **common)
    k.act.activate(
        wait=("mm", 1), signal="done", bias_src_n="INSTRUCTION", src=ps, dst=res,
        in_bias_dtypes="FP32|FP32", out_dtype="FP32", num_active_partitions=128,
        activation_func="IDENTITY", scale_value=1.0,
    )
    k.sp.pseudo_dmatrigger(wait=("done", 1), queue_name="out", block_id=store)
    r = tpbsim.run(k, {"w": w, "x": x})
    want = (w.astype(np.float64).T @ x.astype(np.float64)).astype(F32)
    np.testing.assert_allclose(r.outputs["out"], want, rtol=1e-5, atol=1e-4)


def test_double_buffer():
    x = np.random.default_rng(4).standard_normal((512, 256)).astype(F32)
    k = tpbsim.Kernel("v3")
    xin = k.input("x", x.shape, F32)
    out = k.output("out", x.shape, F32)
    src = [k.sbuf(128, 0x0, (256,), F32), k.sbuf(128, 0x400, (256,), F32)]
    dst = [k.sbuf(128, 0x800, (256,), F32), k.sbuf(128, 0xC00, (256,), F32)]
    loads = [k.dma("in", src[i % 2], xin[128 * i:128 * (i + 1)], signal=f"in{i % 2}")
             for i in range(4)]
    stores = [k.dma("out", out[128 * i:128 * (i + 1)], dst[i % 2], signal=f"free{i % 2}")
              for i in range(4)]
    for i in range(4):
        b = i % 2
        if i >= 2:
            k.dve.nop(wait=(f"free{b}", 1))
        k.dve.tensor_scalar_arith_op(
            wait=(f"in{b}", i // 2 + 1), signal=f"out{b}", src=src[b], dst=dst[b],
            in_dtype="FP32", out_dtype="FP32", num_active_partitions=128,
            op0="MULT", imm0=3.0, op1="ADD", imm1=-0.5,
        )
    order = [("in", 0), ("in", 1), ("out", 0), ("in", 2), ("out", 1), ("in", 3), ("out", 2),
             ("out", 3)]
    for q, i in order:
        if q == "in":
            k.sp.pseudo_dmatrigger(queue_name="in", block_id=loads[i])
        else:
            k.sp.pseudo_dmatrigger(wait=(f"out{i % 2}", i // 2 + 1), queue_name="out",
                                   block_id=stores[i])
    r = tpbsim.run(k, {"x": x}, check_races=True, schedules=4)
    assert r.outputs["out"].tobytes() == (x * F32(3.0) + F32(-0.5)).tobytes()
    assert r.findings == [] and r.schedule_diffs == []


def test_tensor_tensor_add():
    """z = x + y with the DVE's tensor-tensor form, inputs on two queues of 64 partitions."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((64, 256)).astype(F32)
    y = rng.standard_normal((64, 256)).astype(F32)
    k = tpbsim.Kernel("v3")
    xin, yin = k.input("x", x.shape, F32), k.input("y", y.shape, F32)
    z = k.output("z", x.shape, F32)
    a = k.sbuf((32, 96), 0x0, (256,), F32)
    b = k.sbuf((32, 96), 0x400, (256,), F32)
    c = k.sbuf((32, 96), 0x800, (256,), F32)
    k.sp.pseudo_dmatrigger(queue_name="x", block_id=k.dma("x", a, xin, signal="in"))
    k.sp.pseudo_dmatrigger(queue_name="y", block_id=k.dma("y", b, yin, signal="in"))
    assert k.dve.tensor_tensor.operands == ["dst", "src0", "src1"]
    k.dve.tensor_tensor(c, a, b, op="add", wait=("in", 2), signal="done",
                        in_dtypes="FP32|FP32", out_dtype="FP32", num_active_partitions=64)
    k.sp.pseudo_dmatrigger(wait=("done", 1), queue_name="z", block_id=k.dma("z", z, c))
    assert "TENSOR_TENSOR_ARITH_OP" in k.text()["dve"]
    r = tpbsim.run(k, {"x": x, "y": y}, check_races=True)
    assert r.outputs["z"].tobytes() == (x + y).tobytes()
    assert r.findings == []


def test_input_data_is_packed_and_saved(tmp_path):
    x = np.arange(128 * 512, dtype=F32).reshape(128, 512)
    k = tpbsim.Kernel("v3")
    xin = k.input("x", x.shape, F32, data=x)
    out = k.output("out", x.shape, F32)
    a = k.sbuf(128, 0, (512,), F32)
    k.sp.pseudo_dmatrigger(queue_name="in", block_id=k.dma("in", a, xin, signal="x_in"))
    k.sp.pseudo_dmatrigger(wait=("x_in", 1), queue_name="out",
                           block_id=k.dma("out", out, a))
    path = tmp_path / "copy.neff"
    k.save(path)
    r = tpbsim.run(str(path))
    assert r.outputs["out"].tobytes() == x.tobytes()
    assert path.read_bytes() == k.neff()


def test_builder_refuses_unknown_fields_and_instructions():
    k = tpbsim.Kernel("v3")
    with pytest.raises(ValueError) as e:
        k.dve.tensor_scalar_arith_op(no_such_field=1)
    assert "no_such_field" in str(e.value)
    with pytest.raises(ValueError):
        k.dve.tensor_scalar_arith_op(op0="NO_SUCH_OP")
    with pytest.raises(AttributeError):
        k.pe.no_such_instruction
    with pytest.raises(ValueError):
        k.sbuf((0, 129), 0, (4,), F32)
    with pytest.raises(ValueError):
        k.input("x", (4,), F32, data=np.zeros(5, F32))
    # reversed() takes one free dimension of an on-chip tile.
    assert str(k.sbuf(128, 0x100, (16,), F32).reversed()) == "[0x13c step=-1,0,0 num=16,1,1]"
    with pytest.raises(ValueError):
        k.sbuf(128, 0, (4, 4), F32).reversed()
    with pytest.raises(ValueError):
        k.input("w", (4,), F32).reversed()


def test_builder_refuses_values_and_keys_that_are_not_names():
    x = np.zeros((128, 512), F32)
    for key, bad in [("op0", "MULT;"), ("op0", "MULT imm1=9.0"), ("op0", "MULT\n"),
                     ("op0", '"MULT"'), ("op0", "MULT # x"), ("op0", "op0=MULT"),
                     ("in_dtype", "FP32 op1=ADD"), ("in_dtype", "FP32|FP32"), ("op0", "")]:
        k = dve_affine(x)
        before = k.bundles()
        a = k.sbuf(partitions=(0, 128), offset=0x0, shape=(512,), dtype=F32)
        with pytest.raises(ValueError) as e:
            k.dve.tensor_scalar_arith_op(src=a, dst=a, num_active_partitions=128, imm0=3.0,
                                         **{key: bad})
        assert f"{key}: `{bad}` is not a" in str(e.value), (key, bad, str(e.value))
        assert k.bundles() == before
    # A number field takes numbers only: text that would have been a value and a field is a name.
    k = dve_affine(x)
    for bad in ["3.0 op1", "3.0", "1;"]:
        with pytest.raises(ValueError) as e:
            k.dve.tensor_scalar_arith_op(imm0=bad)
        assert f"imm0: expected a number, got the name `{bad}`" in str(e.value)
    with pytest.raises(ValueError) as e:
        k.dve.tensor_scalar_arith_op(**{"imm0=3.0 op1": "ADD"})
    assert "is not a field name" in str(e.value)
    # Names, numbers, dtype pairs and bitfields stay accepted: the other tests build with them.


def test_builder_string_fields_hold_their_characters():
    """A string field's value is its bytes: separators, quotes, newlines and `=` change no other
    field, and the text view of the stream assembles back to the same bundle."""
    k = tpbsim.Kernel("v3")
    off = {n: o for n, _, o in k.sp.pseudo_dmatrigger.fields}
    odd = 'q"; block_id=9\n#='
    k.sp.pseudo_dmatrigger(queue_name="q", block_id=3)
    k.sp.pseudo_dmatrigger(queue_name=odd, block_id=3)
    data = k.bundles()["sp"]
    plain, b = data[:64], data[64:]
    o = off["queue_name"]
    assert b[o:o + len(odd)] == odd.encode()
    assert b[:o] == plain[:o] and b[o + len(odd):] == plain[o + len(odd):]
    assert b[off["block_id"]] == 3
    assert tpbsim.asm(k.text()["sp"], "v3") == data
    with pytest.raises(ValueError, match="non-ASCII"):
        k.sp.pseudo_dmatrigger(queue_name="q\u00e9")
    with pytest.raises(ValueError, match="do not fit in 36"):
        k.sp.pseudo_dmatrigger(queue_name="q" * 37)


def _affine(imm0, imm1, imm0_text, imm1_text, **extra):
    """A TENSOR_SCALAR_ARITH_OP call's keywords and the text line of the same instruction."""
    kw = dict(in_dtype="FP32", out_dtype="bf16", num_active_partitions=128, op0="MULT",
              imm0=imm0, op1="add", imm1=imm1, **extra)
    line = ("TENSOR_SCALAR_ARITH_OP {sync}src=[0x0 step=1,1,1 num=512,1,1] "
            "dst=[0x1000 step=1,16,1 num=16,4,1] in_dtype=FP32 out_dtype=bf16 "
            f"num_active_partitions=128 op0=MULT imm0={imm0_text} op1=add imm1={imm1_text}")
    return kw, line


def test_typed_bundles_equal_the_assembly_of_their_text():
    """Each call is encoded from typed fields; the bundle equals the assembler's of the line
    that writes the same fields in the text form."""
    k = tpbsim.Kernel("v3")
    a = k.sbuf(128, 0x0, (512,), F32)
    b = k.sbuf(128, 0x1000, (4, 16), ml_dtypes.bfloat16)
    dve = []
    floats = [(3.0, "3.0"), (1e-3, "1e-3"), (-0.5, "-0.5"), (-0.0, "-0.0"),
              (float("inf"), "inf"), (float("-inf"), "-inf"), (2.5, "2.5"),
              (-1.25e-30, "-1.25e-30"), (3.4028234663852886e38, "3.4028235e38"), (7, "7")]
    for (v0, t0), (v1, t1) in zip(floats, floats[1:]):
        kw, line = _affine(v0, v1, t0, t1)
        k.dve.tensor_scalar_arith_op(src=a, dst=b, **kw)
        dve.append(line.format(sync=""))
    # Semaphores by name: wait on the first (index 1) at 2, signal the second (index 2).
    kw, line = _affine(1.0, 0.0, "1.0", "0.0")
    k.dve.tensor_scalar_arith_op(src=a, dst=b, wait=("ready", 2), signal="done", **kw)
    dve.append(line.format(sync="wait_mode=SEM_GE_IMM wait_idx=1 semaphore_value=2 "
                                "update_mode=SEM_INC_COMPLETE update_idx=2 "))
    # Enumerations by number and bools; dtype pairs by name and as a tuple.
    k.dve.tensor_tensor(b, a, a, op=0, in_dtypes="FP32|FP32", out_dtype="BF16",
                        num_active_partitions=True)
    dve.append("TENSOR_TENSOR_ARITH_OP dst=[0x1000 step=1,16,1 num=16,4,1] "
               "src0=[0x0 step=1,1,1 num=512,1,1] src1=[0x0 step=1,1,1 num=512,1,1] "
               "op=0 in_dtypes=FP32|FP32 out_dtype=BF16 num_active_partitions=1")
    k.dve.tensor_tensor(b, a, a, op="subtract", in_dtypes=("fp32", 10), out_dtype="BF16")
    dve.append("TENSOR_TENSOR_ARITH_OP dst=[0x1000 step=1,16,1 num=16,4,1] "
               "src0=[0x0 step=1,1,1 num=512,1,1] src1=[0x0 step=1,1,1 num=512,1,1] "
               "op=subtract in_dtypes=fp32|10 out_dtype=BF16")
    assert k.bundles()["dve"] == tpbsim.asm("\n".join(dve), "v3")
    # Bitfields by their text, as a dict and by code; an F32 field from a float and an int.
    w = k.sbuf(128, 0x2000, (128,), ml_dtypes.bfloat16)
    ps = k.psum(128, 0x0, (128,), F32)
    mm = dict(in_dtype="BF16", out_dtype="FP32", num_active_rows=128, num_active_cols=128,
              row_grp=15, col_grp=15)
    k.pe.matmul(ps, w, psum_accumulate_flags="{begin=1}", **mm)
    k.pe.matmul(ps, w, psum_accumulate_flags={"end": 1, "begin": 1}, **mm)
    k.pe.matmul(ps, w, psum_accumulate_flags=0, **mm)
    head = ("MATMUL dst=[0x{:x} step=1,1,1 num=128,1,1] src=[0x2000 step=1,1,1 num=128,1,1] "
            "in_dtype=BF16 out_dtype=FP32 num_active_rows=128 num_active_cols=128 row_grp=15 "
            "col_grp=15 ").format(ps.offset)
    pe = [head + "psum_accumulate_flags={begin=1}", head + "psum_accumulate_flags={begin=1,end=1}",
          head]
    assert k.bundles()["pe"] == tpbsim.asm("\n".join(pe), "v3")
    act = dict(bias_src_n="INSTRUCTION", in_bias_dtypes=("FP32", "FP32"), out_dtype="FP32",
               num_active_partitions=128, activation_func="EXP")
    k.act.activate(a, a, scale_value=0.5, bias=-1.0, **act)
    k.act.activate(a, a, scale_value=2, bias=1e-3, **act)
    act_text = ("ACTIVATE dst=[0x0 step=1,1,1 num=512,1,1] src=[0x0 step=1,1,1 num=512,1,1] "
                "bias_src_n=INSTRUCTION in_bias_dtypes=FP32|FP32 out_dtype=FP32 "
                "num_active_partitions=128 activation_func=EXP ")
    lines = [act_text + "scale_value=0.5 bias=-1.0", act_text + "scale_value=2.0 bias=0.001"]
    assert k.bundles()["act"] == tpbsim.asm("\n".join(lines), "v3")
    # The text view is the disassembly of the same bundles.
    for e, data in k.bundles().items():
        assert tpbsim.asm(k.text()[e], "v3") == data, e


def test_float_immediates_keep_their_bits():
    """A Python float is rounded once to fp32, as numpy.float32 rounds it: no decimal between."""
    k = tpbsim.Kernel("v3")
    a = k.sbuf(128, 0x0, (512,), F32)
    off = {n: o for n, _, o in k.dve.tensor_scalar_arith_op.fields}
    off_act = {n: o for n, _, o in k.act.activate.fields}
    rng = np.random.default_rng(7)
    # Halfway between two fp32 values (ties to even), values whose shortest decimal is long,
    # subnormals, and random doubles over many binades.
    values = [1.0 + 2.0 ** -24, 1.0 + 3 * 2.0 ** -24, 0.1, -2.0 / 3.0, 1e-40, -0.0, np.pi,
              2.0 ** -149 * 1.5, *(rng.standard_normal(40) * 10.0 ** rng.integers(-30, 30, 40))]
    for v in values:
        v = float(v)
        k.dve.tensor_scalar_arith_op(src=a, dst=a, in_dtype="FP32", out_dtype="FP32",
                                     num_active_partitions=128, op0="MULT", imm0=v)
        k.act.activate(a, a, in_bias_dtypes="FP32|FP32", out_dtype="FP32",
                       num_active_partitions=128, scale_value=v, bias=v)
    want = [int(np.array(float(v), np.float32).view(np.uint32)) for v in values]
    dve, act = k.bundles()["dve"], k.bundles()["act"]

    def word(data, i, o):
        return int.from_bytes(data[64 * i + o:64 * i + o + 4], "little")

    assert [word(dve, i, off["imm0"]) for i in range(len(values))] == want
    assert [word(act, i, off_act["scale_value"]) for i in range(len(values))] == want
    assert [word(act, i, off_act["bias"]) for i in range(len(values))] == want
    # The first value is one the shortest decimal would round up: its bits stay 1.0's.
    assert want[0] == 0x3F800000
    with pytest.raises(ValueError, match="beyond the fp32 range"):
        k.dve.tensor_scalar_arith_op(imm0=1e39)


def test_builder_refuses_a_tile_read_as_another_dtype():
    k = tpbsim.Kernel("v3")
    f32 = k.sbuf(partitions=(0, 128), offset=0x0, shape=(512,), dtype=F32)
    b16 = k.sbuf(partitions=(0, 128), offset=0x1000, shape=(512,), dtype=ml_dtypes.bfloat16)
    common = dict(num_active_partitions=128, op0="MULT", imm0=2.0, op1="ADD", imm1=0.0)
    with pytest.raises(ValueError) as e:
        k.dve.tensor_scalar_arith_op(src=f32, dst=f32, in_dtype="BF16", out_dtype="FP32", **common)
    assert "`src` is a float32 tile, but in_dtype reads it as bfloat16" in str(e.value)
    with pytest.raises(ValueError) as e:
        k.dve.tensor_scalar_arith_op(src=f32, dst=b16, in_dtype="FP32", out_dtype="FP32", **common)
    assert "`dst` is a bfloat16 tile, but out_dtype reads it as float32" in str(e.value)
    # Each tile read as its own dtype: a cast from float32 to bfloat16.
    k.dve.tensor_scalar_arith_op(src=f32, dst=b16, in_dtype="FP32", out_dtype="BF16", **common)


def test_builder_fields_come_from_the_spec():
    k = tpbsim.Kernel("v3")
    names = [f[0] for f in k.dve.tensor_scalar_arith_op.fields]
    spec = tpbsim.spec("v3")
    op = next(o for o in spec["opcodes"] if o["mnemonic"] == "TENSOR_SCALAR_ARITH_OP")
    assert names == [f["name"] for f in spec["formats"][op["format"]]]
    assert "op0" in names and "imm0" in names


def test_out_of_bounds_raises():
    k = tpbsim.Kernel("v3")
    out = k.output("out", (128, 512), F32)
    near_end = k.sbuf(128, 0x3F000, (512,), F32)  # 0x3F000 + 2048 > 256 KiB partition span
    k.dve.tensor_scalar_arith_op(
        signal="done", src=near_end, dst=near_end, in_dtype="FP32", out_dtype="FP32",
        num_active_partitions=128, op0="MULT", imm0=1.0, op1="ADD", imm1=0.0,
    )
    k.sp.pseudo_dmatrigger(wait=("done", 1), queue_name="out",
                           block_id=k.dma("out", out, k.sbuf(128, 0, (512,), F32)))
    with pytest.raises(tpbsim.OutOfBounds) as e:
        tpbsim.run(k)
    assert e.value.engine == "dve"
    assert e.value.bundle_index == 0 and e.value.byte_offset == 0


def test_deadlock_of_a_built_kernel():
    k = tpbsim.Kernel("v3")
    out = k.output("out", (128, 4), F32)
    a = k.sbuf(128, 0, (4,), F32)
    k.dve.nop(wait=("never", 1))
    k.sp.pseudo_dmatrigger(wait=("never", 1), queue_name="out", block_id=k.dma("out", out, a))
    with pytest.raises(tpbsim.Deadlock) as e:
        tpbsim.run(k)
    assert e.value.engine is None


def test_positional_operands_are_checked():
    k = tpbsim.Kernel("v3")
    a = k.sbuf((0, 64), 0x0, (16,), F32)
    with pytest.raises(ValueError, match="3 positional operands given, the instruction has 2"):
        k.act.activate(a, a, a)
    with pytest.raises(ValueError, match="operand `dst` given by position and by keyword"):
        k.dve.tensor_tensor(a, a, a, dst=a)
    assert k.pe.matmul.operands == ["dst", "src"]


def test_builder_checks_the_dtype_pairs_against_their_tiles():
    k = tpbsim.Kernel("v3")
    f32 = k.sbuf(partitions=(0, 128), offset=0x0, shape=(256,), dtype=F32)
    f32b = k.sbuf(partitions=(0, 128), offset=0x400, shape=(256,), dtype=F32)
    b16 = k.sbuf(partitions=(0, 128), offset=0x800, shape=(256,), dtype=ml_dtypes.bfloat16)
    tt = dict(op="add", out_dtype="FP32", num_active_partitions=128)
    # in_dtypes: low nibble src0, high nibble src1.
    with pytest.raises(ValueError) as e:
        k.dve.tensor_tensor(f32b, f32, b16, in_dtypes="FP32|FP32", **tt)
    assert "`src1` is a bfloat16 tile, but in_dtypes (high nibble) reads it as float32" in str(e.value)
    with pytest.raises(ValueError) as e:
        k.dve.tensor_tensor(f32b, b16, f32, in_dtypes="FP32|FP32", **tt)
    assert "`src0` is a bfloat16 tile, but in_dtypes (low nibble) reads it as float32" in str(e.value)
    k.dve.tensor_tensor(f32b, b16, f32, in_dtypes="BF16|FP32", **tt)
    # in_bias_dtypes: low nibble the source, high nibble the bias.
    act = dict(dst=f32b, out_dtype="FP32", num_active_partitions=128, activation_func="IDENTITY",
               scale_value=1.0, bias_src_n="INSTRUCTION", bias=0.0)
    with pytest.raises(ValueError) as e:
        k.act.activate(src=f32, in_bias_dtypes="BF16|FP32", **act)
    assert "`src` is a float32 tile, but in_bias_dtypes (low nibble) reads it as bfloat16" in str(e.value)
    k.act.activate(src=f32, in_bias_dtypes="FP32|FP32", **act)
    # mask_src_dtypes: low nibble the mask, high nibble the source.
    i32 = k.sbuf(partitions=(0, 128), offset=0xC00, shape=(256,), dtype=np.int32)
    sr = dict(dst=f32b, out_dtype="FP32", num_active_partitions=128, bypass_op="BYPASS",
              reduce_op="MAX", imm0=0.0)
    with pytest.raises(ValueError) as e:
        k.pool.select_reduce(mask=i32, src=b16, mask_src_dtypes="INT32|FP32", **sr)
    assert "`src` is a bfloat16 tile, but mask_src_dtypes (high nibble) reads it as float32" in str(e.value)
    with pytest.raises(ValueError) as e:
        k.pool.select_reduce(mask=f32, src=f32, mask_src_dtypes="INT32|FP32", **sr)
    assert "`mask` is a float32 tile, but mask_src_dtypes (low nibble) reads it as int32" in str(e.value)
    # in_out_dtypes: low nibble the source, high nibble the destination.
    with pytest.raises(ValueError) as e:
        k.pool.tensor_scalar_affine_select(dst=b16, num_active_partitions=128, in_out_dtypes="FP32|FP32")
    assert "`dst` is a bfloat16 tile, but in_out_dtypes (high nibble) reads it as float32" in str(e.value)
