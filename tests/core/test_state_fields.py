"""asr/core/state_fields.py, the typed properties of the batch's state fields, is generated from
the C
field table: it must match it, and each property must be the live view of its field."""

from pathlib import Path

import pytest

import asr
from asr.core import batch_inputs as _batch_inputs
from asr.core.state_fields import StateFields


def test_generated_state_fields_match_the_c_table():
    path = Path(_batch_inputs.__file__).with_name("state_fields.py")
    assert path.read_text() == _batch_inputs.state_fields_source(), (
        "asr/core/state_fields.py is stale: regenerate it with "
        '.venv/bin/python -c "from asr.core.batch_inputs import write_state_fields as w; w()"'
    )
    props = [n for n, v in vars(StateFields).items() if isinstance(v, property)]
    assert props == list(_batch_inputs.FIELDS)


def test_state_properties_are_the_field_views():
    b = asr.Batch(["sea", "rigid"], 3)
    b.step(0.1, 0.0, 0.0, 1e-3)
    for f in _batch_inputs.FIELDS:
        assert getattr(b, f) is b.field(f)
    assert b.q.shape == (3, 2) and not b.q.flags.writeable


def test_assigning_a_state_field_says_how_to_set_the_state():
    b = asr.Batch(["sea"], 2)
    with pytest.raises(AttributeError, match=r"q: .*read-only.*reset\(q0="):
        b.q = 0.3
    b._note = 1  # other attributes are set as usual
    assert b._note == 1 and not b.q.any()
