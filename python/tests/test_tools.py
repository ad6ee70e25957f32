"""validate, verify, decode / disasm / asm round trips, convert, profile and the NEFF errors."""

import json
import os

import ml_dtypes
import numpy as np
import pytest

import tpbsim

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
KERNELS = os.path.join(ROOT, "testdata", "kernels")
VADD = os.path.join(KERNELS, "vadd.neff")
SOFTMAX = os.path.join(KERNELS, "softmax.neff")


def test_validate_clean_neff_has_no_errors():
    diags = tpbsim.validate(SOFTMAX)
    assert all(d.severity != "error" for d in diags), diags


def test_validate_reports_a_bad_bundle_with_jsonl_keys():
    # An all-ones bundle is not a valid instruction on any engine.
    data = b"\xff" * 64
    diags = tpbsim.validate(data, arch="v3", engine="dve")
    errors = [d for d in diags if d.severity == "error"]
    assert errors, diags
    d = errors[0]
    assert d.layer == "L2"
    assert d.index == 0
    assert isinstance(d.rule, str) and d.rule
    assert set(["severity", "layer", "rule", "message"]) <= set(d.to_dict())


def test_validate_needs_arch_for_a_stream():
    with pytest.raises(ValueError):
        tpbsim.validate(b"\x00" * 64, engine="dve")


def test_verify_neff():
    diags = tpbsim.verify(SOFTMAX)
    assert all(d.layer in ("L1", "L2", "Lint") for d in diags)
    assert all(d.severity != "error" for d in diags), diags


def test_verify_bir_cases_report_exactly_their_errors():
    """The BIR corpus (testdata/bir/cases.json): each module's L1 errors, by rule and code."""
    bir_dir = os.path.join(ROOT, "testdata", "bir")
    with open(os.path.join(bir_dir, "cases.json")) as f:
        cases = json.load(f)
    assert len(cases) >= 10
    for case in cases:
        diags = tpbsim.verify(os.path.join(bir_dir, case["file"]), rules="all")
        got = sorted((d.rule, d.code) for d in diags if d.severity == "error")
        want = sorted((e["rule"], e.get("code")) for e in case["errors"])
        assert got == want, case["file"]
    # The same module given as JSON text.
    with open(os.path.join(bir_dir, cases[0]["file"])) as f:
        text = f.read()
    assert [d.to_dict() for d in tpbsim.verify(text, rules="all")] == [
        d.to_dict() for d in tpbsim.verify(os.path.join(bir_dir, cases[0]["file"]), rules="all")
    ]


def test_verify_refuses_malformed_bir_text():
    with pytest.raises(ValueError):
        tpbsim.verify('{"not": ')


ASM = """TENSOR_SCALAR_ARITH_OP wait_mode=SEM_GE_IMM wait_idx=1 semaphore_value=1 update_mode=SEM_INC_COMPLETE update_idx=2 src=[0x0 step=1,1,1 num=512,1,1] in_dtype=FP32 out_dtype=FP32 num_active_partitions=128 op0=MULT imm0=2.5 op1=ADD imm1=1.0 dst=[0x1000 step=1,1,1 num=512,1,1]
"""


def test_asm_decode_disasm_round_trip():
    data = tpbsim.asm(ASM, "v3")
    assert len(data) == 64
    decoded = tpbsim.decode(data, "v3", "dve")
    assert len(decoded) == 1
    assert decoded[0]["engine"] == "dve"
    text = tpbsim.disasm(data, "v3", "dve")
    assert "TENSOR_SCALAR_ARITH_OP" in text
    # disasm -> asm -> the same bytes, in both syntaxes.
    assert tpbsim.asm(text, "v3") == data
    neuron = tpbsim.disasm(data, "v3", "dve", syntax="neuron")
    assert tpbsim.asm(neuron, "v3") == data


@pytest.mark.parametrize("name", ["softmax", "vadd", "matmul_bf16", "rmsnorm", "iadd_pool"])
def test_round_trip_of_every_testdata_stream(name):
    """Every engine stream of a testdata kernel: decode -> disasm -> asm gives its bytes."""
    path = os.path.join(KERNELS, name + ".neff")
    arch = tpbsim.run(path).arch
    streams = tpbsim.streams(path)
    assert streams
    for s in streams:
        decoded = tpbsim.decode(s["data"], arch, s["engine"])
        assert len(decoded) * 64 == len(s["data"])
        for syntax in ("tpbsim", "neuron"):
            text = tpbsim.disasm(s["data"], arch, s["engine"], syntax=syntax)
            assert tpbsim.asm(text, arch) == s["data"], (s["member"], syntax)


def test_asm_error_names_the_field():
    with pytest.raises(ValueError) as e:
        tpbsim.asm("TENSOR_SCALAR_ARITH_OP no_such_field=1\n", "v3")
    assert "no_such_field" in str(e.value)


def test_decode_refuses_partial_bundles():
    with pytest.raises(ValueError):
        tpbsim.decode(b"\x00" * 63, "v3")


def test_convert_matches_ml_dtypes_rounding():
    x = np.array([[1.0, 1.00390625, -3.14159, 65504.0], [0.1, -0.0, 1e-8, 3.0e38]], np.float32)
    got = tpbsim.convert(x, "bfloat16")
    assert got.dtype == ml_dtypes.bfloat16
    assert got.shape == x.shape
    assert got.tobytes() == x.astype(ml_dtypes.bfloat16).tobytes()
    back = tpbsim.convert(got, np.float32)
    assert back.dtype == np.float32
    assert back.tobytes() == got.astype(np.float32).tobytes()


def test_convert_reads_big_endian_arrays_by_value():
    for dt in [">f4", "<f4", "=f4"]:
        got = tpbsim.convert(np.array([1, 2.5, -3], dt), "bfloat16")
        assert got.astype(np.float32).tolist() == [1.0, 2.5, -3.0], dt
    got = tpbsim.convert(np.array([[1.5, -2.0]], ">f2"), np.float32)
    assert got.dtype == np.float32 and got.tolist() == [[1.5, -2.0]]


def test_convert_keeps_the_shape_of_a_0d_array():
    got = tpbsim.convert(np.array(1.5, np.float32), "bfloat16")
    assert got.shape == ()
    assert float(got.astype(np.float32)) == 1.5


def test_validate_survives_a_file_truncated_while_it_is_read(tmp_path):
    # The file is truncated by another process while tpbsim reads it, again and again: the
    # interpreter must survive (an error is fine), never die of SIGBUS.
    import subprocess
    import sys

    path = tmp_path / "PE.bin"
    child = (
        "import os, sys, tpbsim\n"
        "p = sys.argv[1]\n"
        "for _ in range(20):\n"
        "    with open(p, 'wb') as f:\n"
        "        f.truncate(16 << 20)\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        "        os.truncate(p, 0)\n"
        "        os._exit(0)\n"
        "    try:\n"
        "        tpbsim.validate(p, arch='v3', engine='pe')\n"
        "    except ValueError:\n"
        "        pass\n"
        "    os.waitpid(pid, 0)\n"
        "print('alive')\n"
    )
    r = subprocess.run([sys.executable, "-c", child, str(path)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and "alive" in r.stdout, (r.returncode, r.stderr[-2000:])


def test_convert_fp8_saturates_unless_told_not_to():
    x = np.array([1000.0, -1000.0, 1.0], np.float32)
    sat = tpbsim.convert(x, "float8_e4m3fn")
    assert sat.astype(np.float32).tolist() == [448.0, -448.0, 1.0]
    raw = tpbsim.convert(x, "float8_e4m3fn", saturate=False)
    assert np.isnan(raw.astype(np.float32)[0])


def test_convert_refuses_unknown_dtype():
    with pytest.raises((ValueError, TypeError)):
        tpbsim.convert(np.zeros(4, np.complex64), "float32")


def test_profile_has_per_engine_busy_wait_idle_and_a_critical_path():
    r = tpbsim.run(SOFTMAX)
    p = r.profile()
    assert p["makespan_ns"] > 0
    tracks = {t["track"]: t for t in p["tracks"]}
    assert tracks, p
    for t in tracks.values():
        assert t["busy_ns"] >= 0 and t["wait_ns"] >= 0 and t["idle_ns"] >= 0
        assert t["busy_ns"] + t["idle_ns"] <= p["makespan_ns"] * 1.000001 + 1e-6
    assert p["critical_path"]
    assert p["slices"] and {"track", "name", "start_ns", "dur_ns"} <= set(p["slices"][0])
    # Recorded during the run or replayed afterwards: the same profile.
    assert tpbsim.run(SOFTMAX, profile=True).profile() == p


def test_neff_error_names_member_and_json_path():
    import io
    import tarfile

    # A def.json whose `var` is not a list: the reader names the member and the JSON path.
    bad = io.BytesIO()
    with tarfile.open(fileobj=bad, mode="w") as tf:
        for name, body in (
            ("neff.json", b'{"target_arch": "cayman"}'),
            ("sg00/def.json", b'{"definition": {}, "var": 7}'),
        ):
            info = tarfile.TarInfo(name)
            info.size = len(body)
            tf.addfile(info, io.BytesIO(body))
    with pytest.raises(tpbsim.NeffError) as e:
        tpbsim.run(bad.getvalue())
    assert e.value.member is not None, str(e.value)
    assert e.value.member.endswith("def.json")
    assert e.value.path is not None and "var" in e.value.path, str(e.value)


def test_neff_error_without_a_member():
    with pytest.raises(tpbsim.NeffError) as e:
        tpbsim.run(b"\x01" + b"\x00" * 1500)
    assert e.value.member is None and e.value.path is None


def test_variables_describe_the_kernel():
    v = {x["name"]: x for x in tpbsim.variables(VADD)}
    out = tpbsim.run(VADD).outputs["out"]
    assert v["out"]["kind"] == "output"
    assert tuple(v["out"]["shape"]) == out.shape
    assert v["out"]["dtype"] == out.dtype.name
    assert v["out"]["size"] == out.nbytes
    assert v["x"]["kind"] == "input"
