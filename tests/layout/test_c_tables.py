"""The C core's records listed once (X-macros in csrc/core/asr_model.h, asr_batch.h): the name
tables it exports agree with the structs and enums cffi sees, and the Python constants are read from
them."""

from asr.core import batch
from asr.core.ffi import ffi, lib
from asr.core.model_callbacks import IN_FIELDS, OUT_FIELDS, OUT_NAMES


def _names(name_of, count):
    return [ffi.string(name_of(k)).decode() for k in range(count)]


def test_elastic_out_names_are_the_struct_fields_in_order():
    fields = ffi.typeof("asr_elastic_out").fields
    assert list(OUT_NAMES) == [name for name, _ in fields]
    assert OUT_NAMES[-1] == "clamped" and fields[-1][1].type.cname == "int"
    assert all(f.type.cname == "double" for name, f in fields if name in OUT_FIELDS)
    assert len(OUT_FIELDS) == lib.ASR_NELASTIC_REAL == lib.ASR_EO_CLAMPED


def test_name_tables_refuse_an_index_outside_them():
    for name_of, count in (
        (lib.asr_elastic_in_name, lib.ASR_NELASTIC_IN),
        (lib.asr_elastic_out_name, lib.ASR_NELASTIC_OUT),
        (lib.asr_mode_doc, lib.ASR_NMODE),
        (lib.asr_motor_scheme_name, lib.ASR_NMOTOR_SCHEME),
        (lib.asr_simd_name, lib.ASR_NSIMD),
    ):
        assert name_of(-1) == ffi.NULL and name_of(count) == ffi.NULL
        assert all(name_of(k) != ffi.NULL for k in range(count))


def test_python_constants_come_from_the_c_tables():
    assert batch.MODES == dict(enumerate(_names(lib.asr_mode_doc, lib.ASR_NMODE)))
    assert sorted(batch.MODES) == list(range(7))  # the toolbox's numbering
    assert (lib.ASR_MODE_LINK_TORQUE, lib.ASR_MODE_EQ_PRESET_PID) == (0, 6)
    assert batch.MOTOR_SCHEMES == {
        "euler": lib.ASR_MOTOR_EULER,
        "trapezoid": lib.ASR_MOTOR_TRAPEZOID,
    }
    assert batch.SIMD_KERNELS == ("baseline", "avx2", "avx512")


def test_common_parameter_enum_and_spec_table_agree():
    # ASR_P_<ID> indexes the spec generated from the same list entry
    for k, name in (
        (lib.ASR_P_MOTOR_J, "motor_J"),
        (lib.ASR_P_KT, "motor_Kt"),
        (lib.ASR_P_DRIVE, "drive"),
        (lib.ASR_P_LINK_VEL_MAX, "link_vel_max"),
    ):
        assert ffi.string(lib.asr_common_param_spec(k).name).decode() == name
    assert lib.ASR_P_LINK_VEL_MAX == lib.ASR_NCOMMON - 1
    assert lib.asr_common_param_spec(lib.ASR_NCOMMON) == ffi.NULL


def test_elastic_in_names_are_the_struct_fields_in_order():
    fields = ffi.typeof("asr_elastic_in").fields
    assert list(IN_FIELDS) == [name for name, _ in fields]
    assert all(f.type.cname == "double" for _, f in fields)
    assert len(IN_FIELDS) == lib.ASR_NELASTIC_IN
