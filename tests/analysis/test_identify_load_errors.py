"""Malformed files give a ValueError naming the file and what is wrong, never a KeyError,
TypeError or RecursionError: asr.common.files.read_json (the depth-bounded JSON reader shared by the
loaders) and asr.Identification.load."""

import json
import math

import numpy as np
import pytest

from asr.common.files import JSON_MAX_DEPTH, parse_json, read_json

# (file bytes, words the error holds)
BAD_JSON = [
    (b"", "not valid JSON"),
    (b"{", "not valid JSON"),
    (b"\xff\xfe{}", "not valid JSON"),
    (b"[" * 100_000, "nested too deeply"),  # past the interpreter's recursion limit
    (b"[" * (JSON_MAX_DEPTH + 1) + b"]" * (JSON_MAX_DEPTH + 1), "levels deep"),
    (b'{"a": NaN}', "NaN is not a JSON number"),
    (b"[-Infinity]", "Infinity is not a JSON number"),
    (b"1" * 5000, "not valid JSON"),  # longer than Python's int() takes: its json's ValueError
]


@pytest.mark.parametrize("data, words", BAD_JSON, ids=[w for _, w in BAD_JSON])
def test_read_json_refuses_malformed_files_naming_them(tmp_path, data, words):
    path = tmp_path / "x.json"
    path.write_bytes(data)
    with pytest.raises(ValueError) as err:
        read_json(path, "a test file")
    assert str(err.value).startswith(f"{path}: ") and words in str(err.value)
    assert "it is not a test file written by asr" in str(err.value)


def test_read_json_reads_what_json_writes_up_to_its_depth_limit(tmp_path):
    value = {"a": [1, 2.5, None, {"b": "c"}], "d": True}
    deep = [[[]]]
    path = tmp_path / "x.json"
    path.write_text(json.dumps(value))
    assert read_json(path, "a test file") == value
    assert parse_json(json.dumps(deep), "text", "a test file", max_depth=3) == deep
    with pytest.raises(ValueError, match="text: nested 3 levels deep .limit 2 levels"):
        parse_json(json.dumps(deep), "text", "a test file", max_depth=2)
    assert parse_json(b"[NaN]", "text", "a test file", allow_nan=True)[0] != 0.0
    with pytest.raises(FileNotFoundError):
        read_json(tmp_path / "missing.json", "a test file")


# ---------------------------------------------------------------- Identification.load


def result(**changes):
    """A two-parameter Identification as identify returns one (stderr of k2 infinite: the
    data do not determine it), with `changes`."""
    from asr import Identification

    fields = dict(
        names=("k1", "a1"),
        estimates={"k1": 0.02, "a1": 6.5},
        stderr={"k1": 1e-4, "a1": math.inf},
        ci95={"k1": (0.0198, 0.0202), "a1": (-math.inf, math.inf)},
        covariance=np.array([[1e-8, 0.0], [0.0, math.inf]]),
        initial={"k1": 0.01, "a1": 5.0},
        residual_rms={"tau": 0.003},
        cost=0.12,
        m=300,
        dof=298,
        nfev=14,
        njev=9,
        success=True,
        message="`ftol` termination condition is satisfied.",
        kind="static",
        source="qbmove_advanced",
    )
    return Identification(**dict(fields, **changes))


def saved_dict():
    return json.loads(json.dumps(result().to_dict()))


def test_round_trip_of_both_formats(tmp_path):
    from asr import Identification

    ref = result()
    for ext in ("json", "npz"):
        back = Identification.load(ref.save(tmp_path / f"r.{ext}"))
        assert back.names == ref.names and back.estimates == ref.estimates
        assert back.initial == ref.initial and back.ci95["k1"] == ref.ci95["k1"]
        assert math.isnan(back.stderr["a1"]) and math.isnan(back.ci95["a1"][0])  # null: NaN
        assert back.covariance.shape == (2, 2) and back.covariance[0, 0] == 1e-8
        assert (back.m, back.dof, back.kind, back.summary()) == (300, 298, "static", back.summary())


def _without(key):
    def edit(d):
        del d[key]

    return edit


def _set(path, value):
    """An edit that sets d[path[0]][path[1]]... to value."""

    def edit(d):
        target = d
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return edit


# (edit of the saved dict, words the error holds)
BAD_RESULTS = [
    (_without("names"), "missing names"),
    (_without("ci95"), "missing ci95"),
    (_set(["names"], "k1"), "names: got 'k1', expected an array"),
    (_set(["names"], []), "expected distinct parameter names"),
    (_set(["names"], ["k1", "k1"]), "expected distinct parameter names"),
    (_set(["names"], ["k1", 3]), "names[1]: got 3, expected a string"),
    (_set(["estimates"], [0.02, 6.5]), "estimates: got [0.02, 6.5], expected an object"),
    (_set(["estimates"], {"k1": 0.02}), "estimates: has entries ['k1'], expected one per"),
    (_set(["estimates", "k1"], None), "estimates['k1']: got None, expected a finite number"),
    (_set(["estimates", "k1"], "0.02"), "estimates['k1']: got '0.02', expected a finite"),
    (_set(["estimates", "k1"], True), "estimates['k1']: got True, expected a finite number"),
    (_set(["estimates", "k1"], 10**400), "estimates['k1']: got 1000"),  # beyond a float
    (_set(["estimates", "k1"], [0.02]), "estimates['k1']: got [0.02]"),
    (_set(["stderr", "k1"], -1.0), "stderr['k1']: got -1.0, expected a finite number >= 0"),
    (_set(["ci95", "k1"], [0.1]), "ci95['k1']: got [0.1], expected [low, high]"),
    (_set(["ci95", "k1"], {"lo": 0}), "ci95['k1']: got {'lo': 0}, expected [low, high]"),
    (_set(["ci95", "k1"], [0.1, "x"]), "ci95['k1'][1]: got 'x'"),
    (_set(["covariance"], [[1.0, 0.0]]), "covariance: expected 2 rows of 2 numbers"),
    (_set(["covariance"], [[1.0, 0.0], 5]), "covariance: expected 2 rows of 2 numbers"),
    (_set(["covariance"], 1.0), "covariance: got 1.0, expected an array"),
    (_set(["covariance", 1, 0], {}), "covariance[1][0]: got {}, expected a finite number"),
    (_set(["residual_rms"], {}), "residual_rms: has [], expected channels of ['q', 'tau']"),
    (_set(["residual_rms"], {"x": 1.0}), "residual_rms: has ['x']"),
    (_set(["residual_rms", "tau"], None), "residual_rms['tau']: got None, expected a finite"),
    (_set(["cost"], None), "cost: got None, expected a finite number >= 0"),
    (_set(["m"], 2), "m: got 2, expected a whole number >= 3"),
    (_set(["m"], 300.0), "m: got 300.0, expected a whole number"),
    (_set(["dof"], 5), "dof: got 5, expected m - parameters = 298"),
    (_set(["nfev"], -1), "nfev: got -1, expected a whole number >= 0"),
    (_set(["success"], "yes"), "success: got 'yes', expected true or false"),
    (_set(["message"], None), "message: got None, expected a string"),
    (_set(["kind"], "dynamic"), "kind: got 'dynamic', expected one of static, bench, robot"),
    (_set(["kind"], ["static"]), "kind: got ['static']"),
    (_set(["source"], 7), "source: got 7, expected a string"),
]


@pytest.mark.parametrize("edit, words", BAD_RESULTS, ids=[w[:40] for _, w in BAD_RESULTS])
def test_malformed_result_names_the_file_and_the_entry(tmp_path, edit, words):
    from asr import Identification

    d = saved_dict()
    edit(d)
    for path in (tmp_path / "r.json", tmp_path / "r.npz"):
        if path.suffix == ".json":
            path.write_text(json.dumps(d))
        else:
            np.savez(path, meta=json.dumps(d))
        with pytest.raises(ValueError) as err:
            Identification.load(path)
        text = str(err.value)
        assert text.startswith(f"{path}: ") and words in text, text
        assert "it is not an identification result" in text


# (file bytes, words): whole files that are not results at all
NOT_RESULTS = [
    (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    (
        b'{"format": "asr.identification/1", "names": ' + b"[" * 5000 + b"]" * 5000 + b"}",
        "deep",
    ),
    (b"not json", "not valid JSON"),
    (b"", "not valid JSON"),
    (b'{"format": "asr.identification/1", "cost": NaN}', "NaN is not a JSON number"),
    (
        b"[1, 2]",
        "not an asr identification result (format 'asr.identification/1'; got a JSON",
    ),
    (b"{}", "not an asr identification result (format 'asr.identification/1'; got None)"),
    (b'{"format": "asr.sweep/1"}', "got 'asr.sweep/1'"),
]


@pytest.mark.parametrize("data, words", NOT_RESULTS, ids=[w[:30] for _, w in NOT_RESULTS])
def test_a_json_file_that_is_no_result(tmp_path, data, words):
    from asr import Identification

    path = tmp_path / "r.json"
    path.write_bytes(data)
    with pytest.raises(ValueError) as err:
        Identification.load(path)
    assert str(err.value).startswith(f"{path}: ") and words in str(err.value)


def damaged(path):
    """The bytes of the file, those of the middle third inverted."""
    data = bytearray(path.read_bytes())
    third = len(data) // 3
    data[third : 2 * third] = bytes(255 - b for b in data[third : 2 * third])
    return bytes(data)


def test_an_npz_file_that_is_no_result(tmp_path):
    from asr import Identification

    cases = {
        "empty.npz": lambda p: p.write_bytes(b""),
        "text.npz": lambda p: p.write_bytes(b"this is no archive"),
        "cut.npz": lambda p: p.write_bytes((tmp_path / "whole.npz").read_bytes()[:200]),
        "no_meta.npz": lambda p: np.savez(p, names=np.array(["k1"])),
        "meta_numbers.npz": lambda p: np.savez(p, meta=np.zeros(3)),
        "pickled.npz": lambda p: np.savez(p, meta=np.array([{"format": 1}], dtype=object)),
        "array.npz": lambda p: np.save(p.open("wb"), np.zeros(3)),
        "deep_meta.npz": lambda p: np.savez(p, meta="[" * 100_000),
        "corrupted.npz": lambda p: p.write_bytes(damaged(tmp_path / "packed.npz")),
    }
    result().save(tmp_path / "whole.npz")
    np.savez_compressed(tmp_path / "packed.npz", meta=json.dumps(saved_dict()))
    for name, make in cases.items():
        path = tmp_path / name
        make(path)
        with pytest.raises(ValueError) as err:
            Identification.load(path)
        assert str(err.value).startswith(f"{path}") and "identification result" in str(err.value)
    with pytest.raises(FileNotFoundError):
        Identification.load(tmp_path / "missing.npz")
