"""Cases that once crashed or mis-simulated asr's MuJoCo plugin, as one standalone program.

CASES is a Python program run in a child process (a crash must not take pytest down) as
``python -c CASES <plugin library> [rounds=N] [reuse=optional]``: it loads that library with
mj_loadPluginLibrary alone (so that a sanitizer build of it can stand in for the normal one),
runs every case, asserts its outcome and prints ``case <name>: done`` after each.
tests/mujoco/test_mujoco_plugin_lifecycle.py runs it with the built library and with an
AddressSanitizer build, tests/core/test_valgrind.py under
memcheck. The cases, from the issue they come from:

- a model whose configuration fails when an MjData of another model is stepped with it (a gear
  edited to 2 in a copy): under mj_step, mujoco.batch with set_models and mujoco.rollout. The
  actuator stops with status 2 and a warning; nothing is freed twice.
- a gear, a forcerange and a disabled actuator group set in place after the MjData exists.
- two Python threads compiling MJCFs with params= (strtok's shared position aborted them), and
  mujoco.rollout on 2 threads over models that differ only in params=.
- a new model at a freed model's address with the same plugin text but another joint layout.
- a restored plugin state whose status is NaN, 1e300 or 0.5.
"""

CASES = r'''
import copy, sys, threading
import numpy as np, mujoco, mujoco.batch, mujoco.rollout

mujoco.mj_loadPluginLibrary(sys.argv[1])
FLAGS = dict(a.split("=") for a in sys.argv[2:])
ROUNDS = int(FLAGS.get("rounds", 10))  # of the threads' compilations
REUSE = FLAGS.get("reuse", "required")  # "optional": the allocator need not give it back
FULL = int(mujoco.mjtState.mjSTATE_FULLPHYSICS)
STATUS, STEPS, FAILED = 1, 2, 3  # header values of an instance's plugin state


def mjcf(joints, params=None, driven=None, gear=None):
    """A chain of hinge links j0, j1, ...; an asr sea instance (mode 3, two actuators) on each
    joint in `driven` (default all), k = joints[i] N m/rad, or params= text instead."""
    driven = range(len(joints)) if driven is None else driven
    body, inst, act = "", "", ""
    for j, k in enumerate(joints):
        body += (f'<body pos="0 0.1 0"><joint name="j{j}" axis="1 0 0"/>'
                 '<geom type="capsule" fromto="0 0 0 0 0.1 0" size="0.01" mass="0.5"/>')
        if j not in driven:
            continue
        spring = (f'<config key="params" value="{params}"/>' if params
                  else f'<config key="k" value="{k}"/>')
        inst += (f'<instance name="p{j}"><config key="model" value="sea"/>'
                 f'<config key="mode" value="3"/>{spring}</instance>')
        act += (f'<plugin name="p{j}_1" joint="j{j}" instance="p{j}"/>'
                f'<plugin name="p{j}_2" joint="j{j}" instance="p{j}"/>')
    body += "</body>" * len(joints)
    return (f'<mujoco><extension><plugin plugin="asr.actuator">{inst}</plugin></extension>'
            f'<worldbody>{body}</worldbody><actuator>{act}</actuator></mujoco>')


def header(m, d, k, i):
    return d.plugin_state[m.plugin_stateadr[k] + i]


def run(m, d, steps, ctrl=0.3):
    d.ctrl[:] = ctrl
    for _ in range(steps):
        mujoco.mj_step(m, d)
    return d.qpos.copy()


def fresh_run(xml, steps):
    """The joint angles after `steps` steps of a fresh MjData of the MJCF xml."""
    mm = mujoco.MjModel.from_xml_string(xml)
    return run(mm, mujoco.MjData(mm), steps)


WARNED = []
mujoco.set_mju_user_warning(WARNED.append)  # the single-threaded cases' warnings

m = mujoco.MjModel.from_xml_string(mjcf([100.0, 150.0]))
m2 = copy.deepcopy(m)
m2.actuator_gear[2, 0] = 2  # instance p1's first actuator: the plugin cannot honour it

# mj_step: an MjData of m stepped with m2 (its configuration fails at the step)
d = mujoco.MjData(m)
mujoco.mj_step(m2, d)
assert header(m2, d, 1, STATUS) == 2 and header(m2, d, 1, FAILED) == 0, d.plugin_state
assert header(m2, d, 0, STATUS) == 0 and d.actuator_force[2] == 0.0
assert any("gear = 2" in w and "p1_1" in w for w in WARNED), WARNED
run(m2, d, 5)
assert header(m2, d, 1, STATUS) == 2 and header(m2, d, 1, STEPS) == 6
mujoco.mj_resetData(m, d)
run(m, d, 5)  # m itself, after a reset: both run again
assert header(m, d, 0, STATUS) == 0 and header(m, d, 1, STATUS) == 0
del d
print("case mj_step with a failing model: done")

# in place, after the MjData exists: gear, forcerange, a disabled group; then undone
for name, edit, undo in [
    ("gear", lambda: m.actuator_gear.__setitem__((0, 0), 2.0),
     lambda: m.actuator_gear.__setitem__((0, 0), 1.0)),
    ("forcerange", lambda: (m.actuator_forcelimited.__setitem__(0, 1),
                            m.actuator_forcerange.__setitem__(0, [-1.0, 1.0])),
     lambda: m.actuator_forcelimited.__setitem__(0, 0)),
    ("group", lambda: (m.actuator_group.__setitem__(slice(0, 2), 3),
                       setattr(m.opt, "disableactuator", 1 << 3)),
     lambda: setattr(m.opt, "disableactuator", 0)),
]:
    d = mujoco.MjData(m)
    run(m, d, 3)
    del WARNED[:]
    edit()
    run(m, d, 3)
    assert header(m, d, 0, STATUS) == 2 and header(m, d, 0, FAILED) == 3, (name, d.plugin_state)
    assert header(m, d, 1, STATUS) == 0 and d.actuator_force[0] == 0.0, name
    assert len(WARNED) == 1 and "p0_1" in WARNED[0], (name, WARNED)
    undo()
    mujoco.mj_resetData(m, d)
    run(m, d, 3)
    assert header(m, d, 0, STATUS) == 0 and d.actuator_force[0] != 0.0, name
    del d
print("case settings changed in place: done")

# a restored status that is not a status code
for bad in (float("nan"), 1e300, 0.5, -3.0):
    d = mujoco.MjData(m)
    run(m, d, 2)
    d.plugin_state[m.plugin_stateadr[0] + STATUS] = bad
    del WARNED[:]
    run(m, d, 2)
    assert header(m, d, 0, STATUS) == 2 and d.actuator_force[0] == 0.0, (bad, d.plugin_state)
    assert len(WARNED) == 1 and "header" in WARNED[0], (bad, WARNED)
    del d
print("case restored status not a code: done")
mujoco.set_mju_user_warning(None)

# mujoco.batch with set_models and mujoco.rollout: the failing model's run stops p1 only
nstate = mujoco.mj_stateSize(m, FULL)
x0 = np.zeros((2, nstate))
for r in range(2):
    mujoco.mj_getState(m, mujoco.MjData(m), x0[r], FULL)
ctrl = np.full((2, 10, m.nu), 0.3)
npl = m.plugin_statenum[0]
for persistent in (False, True):
    batch = mujoco.batch.Batch(m, 2, nthread=2, persistent=persistent)
    batch.set_models([m, m2])
    batch.reset()
    out = batch.rollout(10, control=ctrl, record=(FULL,))[FULL]
    last = out[:, -1, -2 * npl:].reshape(2, 2, npl)
    assert last[0, 0, STATUS] == 0 and last[0, 1, STATUS] == 0, last[:, :, :4]
    assert last[1, 0, STATUS] == 0 and last[1, 1, STATUS] == 2, last[:, :, :4]
    del batch
print("case mujoco.batch with set_models: done")
states, _ = mujoco.rollout.rollout([m, m2], [mujoco.MjData(m) for _ in range(2)], x0, ctrl)
last = states[:, -1, -2 * npl:].reshape(2, 2, npl)
assert last[0, 1, STATUS] == 0 and last[1, 1, STATUS] == 2 and last[1, 0, STATUS] == 0
print("case mujoco.rollout with a failing model: done")

# params= from two threads: compiling, and mujoco.rollout over models differing only in it
KS = [20.0 + 7.0 * i for i in range(6)]
TEXT = " ".join(["motor_D=0.25 tau_max=6.5"] * 40) + " k={} max_def=0.{}"  # long: many tokens
reference = {k: fresh_run(mjcf([0, 0], params=TEXT.format(k, i + 1)), 20)
             for i, k in enumerate(KS)}
failures = []


def compile_many(order):
    try:
        for _ in range(ROUNDS):
            for i in order:
                mm = mujoco.MjModel.from_xml_string(mjcf([0, 0], params=TEXT.format(KS[i], i + 1)))
                q = run(mm, mujoco.MjData(mm), 20)
                if not np.array_equal(q, reference[KS[i]]):
                    failures.append((KS[i], q, reference[KS[i]]))
    except Exception as error:  # a thread's exception would be lost
        failures.append(error)


threads = [threading.Thread(target=compile_many, args=(o,))
           for o in (range(len(KS)), range(len(KS) - 1, -1, -1))]
for t in threads:
    t.start()
for t in threads:
    t.join()
assert not failures, failures[:2]
models = [mujoco.MjModel.from_xml_string(mjcf([0, 0], params=TEXT.format(k, i + 1)))
          for i, k in enumerate(KS)]
x0 = np.zeros((len(models), nstate))
for r, mm in enumerate(models):
    mujoco.mj_getState(mm, mujoco.MjData(mm), x0[r], FULL)
ctrl = np.full((len(models), 20, m.nu), 0.3)
serial = np.array([run(mm, mujoco.MjData(mm), 20) for mm in models])
states, _ = mujoco.rollout.rollout(models, [mujoco.MjData(models[0]) for _ in range(2)], x0, ctrl)
np.testing.assert_array_equal(states[:, -1, 1:1 + m.nq], serial)
print("case params= on two threads: done")

# a model at a freed model's address: the same plugin text, another joint layout (copies of
# compiled models, stepped with an MjData of a third: mj_copyModel's allocations of one size
# come back at once)
first, second = (mujoco.MjModel.from_xml_string(mjcf([100.0] * 2, driven=[j])) for j in (0, 1))
expected = run(second, mujoco.MjData(second), 50)
d = mujoco.MjData(first)  # it keeps `first` alive; the copies stepped with it are freed
for attempt in range(200):
    a = copy.deepcopy(first)
    run(a, d, 5)
    address = a._address
    del a
    b = copy.deepcopy(second)
    if b._address == address:
        break
    if attempt < 199:
        del b
else:  # valgrind's and ASan's allocators hold freed blocks back: the rest runs all the same
    assert REUSE == "optional", "no model came back at a freed model's address in 200 tries"
mujoco.mj_resetData(b, d)
np.testing.assert_array_equal(run(b, d, 50), expected)
print(f"case address reuse ({b._address == address}, try {attempt + 1}): done")
'''
