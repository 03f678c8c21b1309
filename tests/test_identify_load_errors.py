"""Malformed files give a ValueError naming the file and what is wrong, never a KeyError,
TypeError or RecursionError: asr._files.read_json (the depth-bounded JSON reader shared by the
loaders) and asr.Identification.load."""

import json

import pytest

from asr._files import JSON_MAX_DEPTH, parse_json, read_json

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
