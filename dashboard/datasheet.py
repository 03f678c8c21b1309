"""POST /api/datasheet (PROTOCOL.md "Datasheet"): asr.datasheet of one joint's compliance model at
the joint's current parameters, as JSON bytes, cached per (robot, variant, joint, parameters,
presets) so a page that asks again (a reload, another client) costs nothing.

The inputs are read from the Session on the runner thread (datasheet_inputs); the datasheet
itself is computed off the runner thread and off the event loop (DatasheetCache.get)."""

import collections
import json
import threading

import numpy as np

import asr

from .references import preset_spec

CACHE_SIZE = 64  # datasheets kept (least recently used dropped): a few robots x joints x edits
SAME_PRESET = 1e-9  # presets closer than this (relative to the preset span) are one curve


def datasheet_inputs(session, joint):
    """Inputs of POST /api/datasheet for `joint` (a name of the session's robot; ControlError
    otherwise): {"robot", "variant", "joint", "model", "params": the model's own parameters
    as the Sim has them now (robot.toml and the parameter changes, instance 0; a "param"-kind
    preset left out: the curves are the presets), "buttons": the soft / stiff presets}."""
    k = session.joint(joint)
    model = session.models[k]
    batch = session.sim.batch
    preset = preset_spec(model)
    skip = preset.get("param") if preset["kind"] == "param" else None
    params = {
        p.name: float(batch.get_param(k, p.name)[0])
        for p in batch.specs[k].params
        if p.name != skip
    }
    buttons = session.button_presets.get(joint)
    return {
        "robot": session.robot.name,
        "variant": session.robot.variant,
        "joint": joint,
        "model": model,
        "params": params,
        "buttons": {b: buttons[b] for b in ("soft", "stiff")} if buttons else None,
    }


def shown_presets(model, params, buttons):
    """(P,) presets of the curves, sorted: asr.datasheet's default spread over the model's range
    plus the page's soft / stiff button presets `buttons` ({"soft", "stiff"} or None).
    params: the model's own parameters {name: value}, SI units, without a "param"-kind preset."""
    spread = asr.datasheet(model, n=3, **params).presets
    extra = np.array(
        [buttons[k] for k in ("soft", "stiff") if buttons and buttons.get(k) is not None],
        dtype=float,
    )
    # a spread preset equal to a button's up to rounding (0.6000000000000001) is that button's
    tol = SAME_PRESET * max(1.0, float(np.ptp(spread)))
    distinct = [p for p in spread if not np.any(np.abs(extra - p) <= tol)]
    return np.unique(np.concatenate([distinct, extra]))


def datasheet_json(inputs):
    """JSON bytes of asr.datasheet for `inputs` (datasheet_inputs): the Datasheet's
    as_dict() plus "robot", "variant", "joint". ValueError / TypeError (asr's) for a model without
    a spring or a parameter out of range."""
    model, params = inputs["model"], dict(inputs["params"])
    if preset_spec(model)["kind"] == "none":
        sheet = asr.datasheet(model, **params)
    else:
        sheet = asr.datasheet(model, shown_presets(model, params, inputs["buttons"]), **params)
    body = dict(
        sheet.as_dict(), robot=inputs["robot"], variant=inputs["variant"], joint=inputs["joint"]
    )
    return json.dumps(body, allow_nan=False).encode()


class DatasheetCache:
    """Thread-safe LRU of datasheet_json answers keyed by their inputs."""

    def __init__(self, size=CACHE_SIZE):
        self._size = size
        self._items = collections.OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def key(inputs):
        return (
            inputs["robot"],
            inputs["variant"],
            inputs["joint"],
            inputs["model"],
            tuple(sorted(inputs["params"].items())),
            tuple(sorted((inputs["buttons"] or {}).items(), key=str)),
        )

    def get(self, inputs):
        key = self.key(inputs)
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        body = datasheet_json(inputs)  # outside the lock: two equal requests may both compute
        with self._lock:
            self._items[key] = body
            while len(self._items) > self._size:
                self._items.popitem(last=False)
        return body
