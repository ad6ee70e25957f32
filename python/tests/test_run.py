"""Run the testdata kernels from Python and check them against their references."""

import glob
import json
import os

import ml_dtypes  # noqa: F401
import numpy as np
import pytest

import tpbsim

KERNELS = os.path.join(os.path.dirname(__file__), "..", "..", "testdata", "kernels")
WITH_REF = sorted(
    p[: -len(".ref")] for p in glob.glob(os.path.join(KERNELS, "*.ref")) if os.path.isdir(p)
)


def ulp_distance(a, b):
    """Distance in units in the last place between two float arrays of the same dtype."""
    bits = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}[a.dtype.itemsize]
    ia = a.view(bits).astype(np.int64)
    ib = b.view(bits).astype(np.int64)
    # Map sign-magnitude to a monotonic integer line.
    top = np.int64(1) << (8 * a.dtype.itemsize - 1)
    ia = np.where(ia < 0, -(ia + top), ia)
    ib = np.where(ib < 0, -(ib + top), ib)
    return np.abs(ia - ib)


def check_close(name, got, ref, tol):
    assert got.shape == ref.shape, name
    assert got.dtype == ref.dtype, name
    atol = tol.get("atol", 0.0)
    rtol = tol.get("rtol", 0.0)
    ulp = tol.get("ulp", 0)
    if atol == 0 and rtol == 0 and ulp == 0:
        assert got.tobytes() == ref.tobytes(), name
        return
    if ulp:
        assert int(ulp_distance(got, ref).max(initial=0)) <= ulp, name
        return
    g = got.astype(np.float64)
    r = ref.astype(np.float64)
    assert np.all(np.abs(g - r) <= atol + rtol * np.abs(r)), name


@pytest.mark.parametrize("stem", WITH_REF, ids=os.path.basename)
def test_kernel_matches_reference(stem):
    result = tpbsim.run(stem + ".neff")
    ref_dir = stem + ".ref"
    tol_file = os.path.join(ref_dir, "tolerance.json")
    tols = json.load(open(tol_file)) if os.path.exists(tol_file) else {}
    assert result.outputs, "the kernel has outputs"
    for name, got in result.outputs.items():
        ref = np.load(os.path.join(ref_dir, name + ".npy"))
        tol = tols.get("outputs", {}).get(name, tols.get("default", {}))
        check_close(name, got, ref, tol)
    sched = result.stats["sched"]
    assert sched["steps"] > 0
    assert sum(sched["per_engine"]) == sched["steps"]


def test_bytes_and_path_give_the_same_outputs():
    path = os.path.join(KERNELS, "vadd.neff")
    a = tpbsim.run(path)
    b = tpbsim.run(open(path, "rb").read())
    assert a.outputs.keys() == b.outputs.keys()
    for k in a.outputs:
        assert a.outputs[k].tobytes() == b.outputs[k].tobytes()


def test_deadlock_raises():
    with pytest.raises(tpbsim.Deadlock) as e:
        tpbsim.run(os.path.join(KERNELS, "deadlock_cycle.neff"))
    assert isinstance(e.value, tpbsim.SimulationFault)
    assert e.value.kind == "deadlock"
    assert "deadlock" in str(e.value)


def test_malformed_neff_raises():
    with pytest.raises(tpbsim.NeffError):
        tpbsim.run(b"\x01" + b"\x00" * 1500)
    data = open(os.path.join(KERNELS, "vadd.neff"), "rb").read()
    with pytest.raises(tpbsim.NeffError):
        tpbsim.run(data[: len(data) // 2])


def test_missing_file_raises_neff_error(tmp_path):
    with pytest.raises(tpbsim.NeffError):
        tpbsim.run(str(tmp_path / "absent.neff"))


def test_unknown_input_is_refused():
    with pytest.raises(ValueError):
        tpbsim.run(os.path.join(KERNELS, "vadd.neff"), {"no_such_input": np.zeros(4)})


def test_given_inputs_are_used():
    """vadd with new inputs from numpy: the output is x + y computed by numpy."""
    rng = np.random.default_rng(7)
    path = os.path.join(KERNELS, "vadd.neff")
    base = tpbsim.run(path)
    shape = base.outputs["out"].shape
    x = rng.standard_normal(shape).astype(np.float32)
    y = rng.standard_normal(shape).astype(np.float32)
    r = tpbsim.run(path, {"x": x, "y": y})
    assert r.outputs["out"].tobytes() == (x + y).tobytes()
    assert r.outputs["out"].tobytes() != base.outputs["out"].tobytes()


def test_wrong_dtype_is_refused():
    path = os.path.join(KERNELS, "vadd.neff")
    shape = tpbsim.run(path).outputs["out"].shape
    with pytest.raises(ValueError):
        tpbsim.run(path, {"x": np.zeros(shape, np.float64)})


REAL = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "real")
REAL_NEFFS = sorted(glob.glob(os.path.join(REAL, "**", "*.neff"), recursive=True))


def test_the_compilers_lnc2_matmul_runs_on_two_cores_bit_for_bit():
    path = os.path.join(REAL, "nkipy", "matmul_small.neff")
    rng = np.random.default_rng(3)
    x = rng.integers(-2, 3, (128, 256)).astype(np.float16)
    y = rng.integers(-2, 3, (256, 128)).astype(np.float16)
    r = tpbsim.run(path, {"x": x, "y": y})
    want = (x.astype(np.float64) @ y.astype(np.float64)).astype(np.float16)
    got = r.outputs["output0"]
    assert got.dtype == np.float16 and got.shape == (128, 128)
    assert got.tobytes() == want.tobytes()
    assert [c["subgraph"] for c in r.cores] == ["sg00", "sg01"]
    assert all(c["stats"]["sched"]["steps"] > 0 for c in r.cores)
    assert r.findings == []
    prof = r.profile()
    assert [c["subgraph"] for c in prof["cores"]] == ["sg00", "sg01"]


def test_big_endian_inputs_are_converted_not_reinterpreted():
    path = os.path.join(REAL, "nkipy", "matmul_small.neff")
    rng = np.random.default_rng(4)
    x = rng.integers(-2, 3, (128, 256)).astype(np.float16)
    y = rng.integers(-2, 3, (256, 128)).astype(np.float16)
    little = tpbsim.run(path, {"x": x, "y": y}).outputs["output0"]
    big = tpbsim.run(path, {"x": x.astype(">f2"), "y": y.astype(">f2")}).outputs["output0"]
    assert big.tobytes() == little.tobytes()


@pytest.mark.parametrize("path", REAL_NEFFS)
def test_every_real_neff_runs(path):
    inputs = {}
    for v in tpbsim.variables(path):
        if v["kind"] == "input":
            inputs[v["name"]] = np.zeros(v["shape"], dtype=v["dtype"])
    r = tpbsim.run(path, inputs)
    assert r.findings == []
    assert len(r.cores) >= 1
