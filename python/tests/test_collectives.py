"""Worlds of ranks from Python: the collective kernels of testdata/collectives."""

import glob
import json
import os

import ml_dtypes
import numpy as np
import pytest

import tpbsim

HERE = os.path.join(os.path.dirname(__file__), "..", "..", "testdata", "collectives")
KERNELS = sorted(glob.glob(os.path.join(HERE, "*.neff")))


def load(path):
    """An .npy file; numpy stores bfloat16 arrays as 2-byte void, read back as bfloat16."""
    a = np.load(path)
    return a.view(ml_dtypes.bfloat16) if a.dtype.kind == "V" and a.dtype.itemsize == 2 else a


def per_rank_inputs(stem):
    """One dict per rank from the stacked `<stem>.in/<name>.npy` files."""
    stacked = {
        os.path.basename(f)[: -len(".npy")]: load(f)
        for f in sorted(glob.glob(os.path.join(stem + ".in", "*.npy")))
    }
    ranks = {len(a) for a in stacked.values()}
    assert len(ranks) == 1
    return [{k: a[r] for k, a in stacked.items()} for r in range(ranks.pop())]


def test_there_are_collective_kernels():
    assert len(KERNELS) == 4


@pytest.mark.parametrize("neff", KERNELS, ids=os.path.basename)
def test_each_rank_matches_its_reference(neff):
    stem = neff[: -len(".neff")]
    inputs = per_rank_inputs(stem)
    result = tpbsim.run(neff, inputs=inputs)
    assert result.ranks == len(inputs) == 4
    assert result.collective_order == "replica"
    assert len(result.outputs) == 4 and len(result.stats) == 4
    for r, outs in enumerate(result.outputs):
        ref_dir = os.path.join(stem + ".ref", "rank%d" % r)
        tol_file = os.path.join(ref_dir, "tolerance.json")
        tol = json.load(open(tol_file))["default"] if os.path.exists(tol_file) else {}
        refs = sorted(glob.glob(os.path.join(ref_dir, "*.npy")))
        assert refs
        for f in refs:
            name = os.path.basename(f)[: -len(".npy")]
            got, want = outs[name], load(f)
            assert got.shape == want.shape and got.dtype == want.dtype, name
            if tol:
                np.testing.assert_allclose(got, want, rtol=tol["rtol"], atol=tol["atol"])
            else:
                assert got.tobytes() == want.tobytes(), (r, name)


def test_the_world_size_comes_from_the_kernel_and_the_ring_order_is_an_option():
    neff = os.path.join(HERE, "reduce_scatter_all_gather.neff")
    inputs = per_rank_inputs(neff[: -len(".neff")])
    # The same inputs for every rank: the world size is the kernel's (4).
    same = tpbsim.run(neff, inputs=inputs[0])
    assert same.ranks == 4
    want = (inputs[0]["x"].astype(np.float32) * 4).astype(inputs[0]["x"].dtype)
    for outs in same.outputs:
        assert outs["y"].tobytes() == want.tobytes()
    ring = tpbsim.run(neff, inputs=inputs, collective_order="ring")
    assert ring.collective_order == "ring"
    for outs in ring.outputs[1:]:
        assert outs["y"].tobytes() == ring.outputs[0]["y"].tobytes()


def test_bad_worlds_are_refused():
    neff = os.path.join(HERE, "permute_ring.neff")
    inputs = per_rank_inputs(neff[: -len(".neff")])
    with pytest.raises(ValueError, match="span 4 ranks"):
        tpbsim.run(neff, inputs=inputs[:2])
    with pytest.raises(ValueError, match="inputs are given for 4 ranks"):
        tpbsim.run(neff, inputs=inputs, ranks=8)
    with pytest.raises(ValueError, match="collective_order"):
        tpbsim.run(neff, inputs=inputs, collective_order="tree")
    with pytest.raises(ValueError, match="several ranks"):
        tpbsim.run(neff, inputs=inputs, profile=True)
    with pytest.raises(TypeError):
        tpbsim.run(neff, inputs=[1, 2, 3, 4])


@pytest.mark.parametrize("neff", KERNELS, ids=os.path.basename)
def test_the_race_check_runs_across_ranks(neff):
    """The collective kernels are correct: every consumer of a collective's output waits for
    its completion, so the race check finds nothing on any rank, under every interleaving."""
    inputs = per_rank_inputs(neff[: -len(".neff")])
    result = tpbsim.run(neff, inputs=inputs, check_races=True, schedules=3)
    assert result.findings == [[], [], [], []]
    assert result.schedule_diffs == [[], [], [], []]
