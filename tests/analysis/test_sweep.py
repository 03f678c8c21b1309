"""asr.sweep: batched sweeps equal one-by-one runs bit for bit, reproducible grid order and random
seeding, resuming after an interrupt, Dask-distributed batches equal to local ones (a real
two-process LocalCluster on loopback), and clear errors for bad input."""

import dataclasses
import itertools
import json
import os

import numpy as np
import pytest

import asr
from asr.analysis.sweep import SweepResult, sweep
from tests.conftest import require
from tests.support.paths import TESTS  # noqa: E402

HERE = str(TESTS)
PENDULUM = os.path.join(
    HERE, "data", "robots", "pendulum"
)  # 1 DOF, dt 1 ms, mode 3 (qbmove_advanced)
STEPS = 150
REFS = [[0.8, 0.3]]
GRID = {
    "joint.k1": [0.0019, 0.003, 0.005],
    "mujoco.body_mass.link": [0.1, 0.3],
    "refs.preset.joint": [0.2, 0.5],
}


def reference_metrics(q, tau, d1, d2, eq):
    """The built-in metrics of one instance, written out independently."""
    return {
        "final_q_error": np.max(np.abs(q[-1] - eq)),
        "rms_q_error": np.sqrt(np.mean((q - eq) ** 2)),
        "max_tau": np.max(np.abs(tau)),
        "max_deflection": np.max(np.maximum(np.abs(d1), np.abs(d2))),
    }


def q_end(out, sim):
    return {"q_end": out["q"][:, -1, 0], "th1_mean": out["th1"][:, :, 0].mean(axis=1)}


def test_grid_equals_single_instance_runs():
    res = sweep(
        PENDULUM,
        GRID,
        steps=STEPS,
        refs=REFS,
        batch_size=5,
        progress=False,
        metrics=("final_q_error", "rms_q_error", "max_tau", "max_deflection", q_end),
    )
    assert len(res) == 12 and res.complete  # batches of 5, 5, 2
    for i, (k1, mass, preset) in enumerate(itertools.product(*GRID.values())):
        sim = asr.Sim(
            PENDULUM, 1, params={"joint": {"k1": k1}}, mujoco_params={"body_mass": {"link": mass}}
        )
        out2 = sim.rollout(
            STEPS, [[0.8, preset]], record=("q", "tau_joint", "defl1", "defl2", "th1")
        )
        ref = reference_metrics(
            out2["q"][0], out2["tau_joint"][0], out2["defl1"][0], out2["defl2"][0], 0.8
        )
        for name, value in ref.items():
            assert res.metrics[name][i] == value, (i, name)  # bit-identical
        assert res.metrics["q_end"][i] == out2["q"][0, -1, 0]
        assert res.metrics["th1_mean"][i] == out2["th1"][0, :, 0].mean()
    # tidy table
    rows = res.rows()
    assert len(rows) == 12 and rows[3]["sample"] == 3
    assert rows[3]["joint.k1"] == 0.0019 and rows[3]["refs.preset.joint"] == 0.5
    assert set(rows[0]) == {
        "sample",
        *GRID,
        "final_q_error",
        "rms_q_error",
        "max_tau",
        "max_deflection",
        "q_end",
        "th1_mean",
    }


def test_random_per_step_refs_and_geom_friction_reach_the_sim():
    """pendulum_1dof (dt 0.1 ms), actuator + MuJoCo fields incl. geom_friction, per-step refs
    with the equilibrium column swept; each sample against its own n = 1 Sim."""
    robot = "pendulum_1dof"
    steps = 120
    t = np.arange(steps) * 1e-4
    refs = np.stack([np.stack([0.3 * t / t[-1], np.full(steps, 0.2)], axis=-1)], axis=1)
    space = {
        "joint.k1": (0.0015, 0.004),
        "mujoco.geom_friction.mass": (0.2, 1.5),
        "mujoco.dof_damping.joint": (0.0, 0.05),
        "refs.equilibrium.joint": (-0.2, 0.2),
    }

    def seen(out, sim):  # what each instance's model and batch actually got
        return {
            "friction": np.array(
                [m.geom_friction[sim.models[0].geom("mass").id, 0] for m in sim.models]
            ),
            "torsional": np.array([m.geom_friction[m.geom("mass").id, 1] for m in sim.models]),
            "k1": sim.batch.get_param(0, "k1"),
        }

    res = sweep(
        robot,
        space,
        method="random",
        samples=5,
        seed=3,
        steps=steps,
        refs=refs,
        batch_size=2,
        progress=False,
        metrics=("rms_q_error", seen),
    )
    assert np.array_equal(res.metrics["friction"], res.param("mujoco.geom_friction.mass"))
    assert np.array_equal(res.metrics["k1"], res.param("joint.k1"))
    base = asr.load_robot(robot).mj_model()
    assert np.all(res.metrics["torsional"] == base.geom("mass").friction[1])
    for i in range(5):
        k1, fr, damp, eq = res.params[i]
        f3 = np.array(base.geom("mass").friction)
        f3[0] = fr
        sim = asr.Sim(
            robot,
            1,
            params={"joint": {"k1": k1}},
            mujoco_params={"geom_friction": {"mass": f3}, "dof_damping": {"joint": damp}},
        )
        r = refs.copy()
        r[:, 0, 0] = eq
        out = sim.rollout(steps, r[None], record=("q",))
        assert res.metrics["rms_q_error"][i] == np.sqrt(np.mean((out["q"][0, :, 0] - eq) ** 2))


def test_grid_order_and_random_seeding_are_reproducible():
    space = {"joint.kc": [0.0, 1.0, 2.0], "refs.preset.joint": [0.1, 0.2]}
    res = sweep(PENDULUM, space, steps=5, refs=REFS, progress=False, metrics="max_tau")
    assert res.names == tuple(space)
    assert res.params.tolist() == [
        [0.0, 0.1],
        [0.0, 0.2],
        [1.0, 0.1],
        [1.0, 0.2],
        [2.0, 0.1],
        [2.0, 0.2],
    ]  # last key fastest
    rspace = {"joint.k1": (0.001, 0.004), "mujoco.body_mass.link": (0.1, 0.3)}
    kw = dict(method="random", steps=5, refs=REFS, progress=False, metrics="max_tau")
    a = sweep(PENDULUM, rspace, samples=6, seed=7, **kw)
    b = sweep(PENDULUM, rspace, samples=6, seed=7, batch_size=4, **kw)
    c = sweep(PENDULUM, rspace, samples=6, seed=8, **kw)
    longer = sweep(PENDULUM, rspace, samples=9, seed=7, **kw)
    assert np.array_equal(a.params, b.params) and np.array_equal(
        a.metrics["max_tau"], b.metrics["max_tau"]
    )
    assert not np.array_equal(a.params, c.params)
    assert np.array_equal(longer.params[:6], a.params)  # more samples extend, not change
    u = np.random.default_rng(7).random((6, 2))
    lo, hi = np.array([0.001, 0.1]), np.array([0.004, 0.3])
    assert np.array_equal(a.params, lo + (hi - lo) * u)
    assert np.all((a.params >= [0.001, 0.1]) & (a.params < [0.004, 0.3]))


class InterruptAt:
    """Metrics callable that raises KeyboardInterrupt on its k-th call (0-based)."""

    def __init__(self, k):
        self.k, self.calls = k, 0

    def __call__(self, out, sim):
        if self.calls == self.k:
            raise KeyboardInterrupt
        self.calls += 1
        return q_end(out, sim)


def test_interrupt_then_resume_equals_uninterrupted(tmp_path):
    path = str(tmp_path / "sweep.npz")
    kw = dict(steps=STEPS, refs=REFS, batch_size=3, progress=False)
    full = sweep(PENDULUM, GRID, metrics=("final_q_error", q_end), **kw)
    with pytest.raises(KeyboardInterrupt):
        sweep(PENDULUM, GRID, metrics=("final_q_error", InterruptAt(2)), results=path, **kw)
    part = SweepResult.load(path)
    assert part.done.tolist() == [True] * 6 + [False] * 6  # batches 0 and 1 saved
    assert np.isnan(part.metrics["q_end"][6:]).all()
    assert len(part.rows()) == 6
    with open(tmp_path / "sweep.json") as f:
        meta = json.load(f)
    assert meta["space"] == GRID and meta["batch_size"] == 3
    counter = InterruptAt(-1)
    resumed = sweep(PENDULUM, GRID, metrics=("final_q_error", counter), results=path, **kw)
    assert counter.calls == 2  # only the two missing batches ran
    assert resumed.complete and np.array_equal(resumed.params, full.params)
    for k in full.metrics:
        assert np.array_equal(resumed.metrics[k], full.metrics[k]), k
    again = SweepResult.load(path)
    assert again.complete and np.array_equal(again.metrics["q_end"], full.metrics["q_end"])
    # a different sweep in the same file is refused
    with pytest.raises(ValueError, match="different sweep.*space"):
        sweep(PENDULUM, {"joint.k1": [0.002]}, metrics="final_q_error", results=path, **kw)
    with pytest.raises(ValueError, match="different sweep.*batch_size"):
        sweep(PENDULUM, GRID, metrics="final_q_error", results=path, **dict(kw, batch_size=4))
    rpath = str(tmp_path / "random.npz")
    rkw = dict(method="random", samples=4, steps=5, refs=REFS, progress=False, results=rpath)
    sweep(PENDULUM, {"joint.k1": (0.001, 0.003)}, seed=1, **rkw)
    with pytest.raises(ValueError, match="different sweep.*seed"):
        sweep(PENDULUM, {"joint.k1": (0.001, 0.003)}, seed=2, **rkw)


def test_results_file_with_the_old_format_tag_loads_and_resumes(tmp_path):
    """Files saved with the former tag "asr-sweep-1" still load and resume; saving writes the
    current "asr.sweep/2" (with checksums)."""
    path = str(tmp_path / "old.npz")
    kw = dict(steps=STEPS, refs=REFS, batch_size=3, progress=False, results=path)
    full = sweep(PENDULUM, GRID, metrics="final_q_error", **kw)
    assert full.meta["format"] == "asr.sweep/2"
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(str(arrays["meta"]))
    meta["format"] = "asr-sweep-1"
    arrays["meta"] = np.array(json.dumps(meta))
    np.savez(path, **arrays)
    old = SweepResult.load(path)
    assert old.meta["format"] == "asr-sweep-1"
    assert np.array_equal(old.metrics["final_q_error"], full.metrics["final_q_error"])
    resumed = sweep(PENDULUM, GRID, metrics="final_q_error", **kw)
    assert np.array_equal(resumed.metrics["final_q_error"], full.metrics["final_q_error"])
    assert SweepResult.load(path).meta["format"] == "asr.sweep/2"
    meta["format"] = "asr-sweep-2"
    arrays["meta"] = np.array(json.dumps(meta))
    np.savez(path, **arrays)
    with pytest.raises(ValueError, match="not an asr sweep file"):
        SweepResult.load(path)


@pytest.fixture(scope="module")
def dask_client():
    require("dask")
    distributed = require("distributed")
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
    )
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


@pytest.mark.slow
def test_distributed_equals_local(dask_client):
    kw = dict(steps=STEPS, refs=REFS, batch_size=4, progress=False)
    local = sweep(PENDULUM, GRID, **kw)
    remote = sweep(PENDULUM, GRID, executor=dask_client, **kw)
    assert remote.complete and np.array_equal(remote.params, local.params)
    for k in local.metrics:
        assert np.array_equal(remote.metrics[k], local.metrics[k]), k
    rspace = {"joint.k1": (0.001, 0.004), "refs.preset.joint": (0.1, 0.6)}
    rkw = dict(method="random", samples=7, seed=5, metrics=("rms_q_error", "max_tau"), **kw)
    a, b = sweep(PENDULUM, rspace, **rkw), sweep(PENDULUM, rspace, executor=dask_client, **rkw)
    assert all(np.array_equal(a.metrics[k], b.metrics[k]) for k in a.metrics)
    # the batches ran in the worker processes (which imported asr.analysis.sweep there)
    ran = dask_client.run(lambda: "asr.analysis.sweep" in __import__("sys").modules)
    assert len(ran) == 2 and any(ran.values())


def test_to_pandas_or_clear_import_error():
    res = sweep(PENDULUM, {"joint.k1": [0.002, 0.003]}, steps=5, refs=REFS, progress=False)
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="needs pandas.*rows"):
            res.to_pandas()
    else:
        df = res.to_pandas()
        assert df.shape == (2, 6) and list(df["joint.k1"]) == [0.002, 0.003]


@pytest.mark.parametrize(
    "space, kw, match",
    [
        ({}, {}, "space: empty"),
        ([("joint.k1", [1])], {}, "expected a dict"),
        ({"joint2.k1": [0.002]}, {}, "unknown joint 'joint2'"),
        ({"joint.kk": [0.002]}, {}, "unknown parameter 'kk'.*qbmove_advanced"),
        ({"mujoco.body_mass.nolink": [0.1]}, {}, "no body named 'nolink'"),
        ({"mujoco.geom_margin.g": [0.1]}, {}, "unknown MuJoCo field 'geom_margin'"),
        ({"mujoco.body_mass": [0.1]}, {}, "mujoco.<field>.<object>"),
        ({"refs.stiffness.joint": [0.1]}, {}, "refs.equilibrium"),
        ({"a.b.c": [0.1]}, {}, "expected '<joint>.<param>'"),
        ({"joint.k1": []}, {}, "no values"),
        ({"joint.k1": 0.002}, {}, "expected a list of values"),
        ({"joint.k1": [-1.0]}, {}, "k1: got -1"),
        ({"joint.k1": ["x"]}, {}, "must be numbers"),
        ({"mujoco.body_mass.link": [-0.1]}, {}, "negative"),
        ({"joint.k1": [0.002]}, {"samples": 3}, "only for method='random'"),
        ({"joint.k1": (0.004, 0.001)}, {"method": "random", "samples": 3}, "needs lo < hi"),
        ({"joint.k1": (0.0, 0.001)}, {"method": "random", "samples": 3}, "k1: got 0"),
        ({"joint.k1": [0.1, 0.2, 0.3]}, {"method": "random", "samples": 3}, "range \\(lo, hi\\)"),
        ({"joint.k1": (0.001, 0.002)}, {"method": "random"}, "samples: method='random' needs"),
        ({"joint.k1": (0.001, 0.002)}, {"method": "random", "samples": 2, "seed": -1}, "seed"),
        ({"joint.drive": (0, 1)}, {"method": "random", "samples": 2}, "integer parameter"),
        ({"joint.k1": [0.002]}, {"method": "latin"}, "method: got 'latin'"),
        ({"joint.k1": [0.002]}, {"metrics": ("max_speed",)}, "unknown built-in metric 'max_speed'"),
        ({"joint.k1": [0.002]}, {"metrics": ()}, "metrics: empty"),
        ({"joint.k1": [0.002]}, {"refs": [0.8, 0.3]}, "refs: expected shape"),
        ({"joint.k1": [0.002]}, {"refs": [[np.nan, 0.3]]}, "NaN"),
        ({"joint.k1": [0.002]}, {"batch_size": 0}, "batch_size: expected a positive"),
        ({"joint.k1": [0.002]}, {"steps": 0}, "steps: expected a positive"),
        ({"joint.k1": [0.002]}, {"metrics": lambda out, sim: {"x": np.zeros(3)}}, "shape"),
        ({"joint.k1": [0.002]}, {"metrics": lambda out, sim: [1.0]}, "must return"),
    ],
)
def test_bad_inputs_raise_clear_errors(space, kw, match):
    args = dict(steps=5, refs=REFS, progress=False)
    args.update(kw)
    with pytest.raises((ValueError, TypeError), match=match):
        sweep(PENDULUM, space, **args)


def test_bad_robot_and_executor():
    with pytest.raises(FileNotFoundError, match="no_such_robot"):
        sweep("no_such_robot", {"joint.k1": [1.0]}, steps=5, refs=REFS)
    with pytest.raises(ValueError, match="unknown variant"):
        sweep(PENDULUM, {"joint.k1": [1.0]}, steps=5, refs=REFS, variant="nope")
    with pytest.raises(TypeError, match="executor"):
        sweep(
            PENDULUM, {"joint.k1": [0.002]}, steps=5, refs=REFS, executor=object(), progress=False
        )
    # q errors need a position-like first reference: mode 0 (torque) is refused
    robot = asr.load_robot(PENDULUM)
    torque = dataclasses.replace(
        robot, joints=(dataclasses.replace(robot.joints[0], mode=0, model="rigid", params={}),)
    )
    with pytest.raises(ValueError, match="modes"):
        sweep(torque, {"mujoco.body_mass.link": [0.1]}, steps=5, refs=REFS, metrics="final_q_error")
