/* asr.h - public C API of the asr compliant-actuator core.
 *
 * The C core is split into parts, one folder each, with one public header each; this umbrella
 * header includes them all, in this order:
 *   core/asr_batch.h   the actuator core: the batch (state fields, listed in core/asr_fields.h;
 *                      create, parameters, step); it includes core/asr_status.h (status codes)
 *                      and core/asr_model.h (operation modes, parameter specs, compliance models:
 *                      model definitions, the second reference / stiffness preset, elastic and
 *                      refmap callbacks)
 *   engine/asr_engine.h  coupling a batch to a rigid-body engine
 *   interaction/asr_interaction.h  interaction control: admittance, direct force, FSM, F/T
 *                      sensor, IK
 *   cpr/asr_cpr.h      continuum parallel robots: Cosserat rods, the CPR solver, rotation vectors
 * A part includes only its own files and those of the parts it builds on, by path from csrc/
 * (`#include "core/batch.h"`, so compile with -I csrc): core depends on nothing, engine on core,
 * interaction on engine and core, cpr on core; no part includes asr.h, and of another part a
 * file includes only its public headers, asr_*.h (tests/layout/test_csrc_layout.py checks both).
 * Two public headers of the core are for the parts built on it and stay out of this header and
 * the cdef (C helpers, not Python API): core/asr_threads.h (asr_parallel_for, the thread runner)
 * and core/asr_simd.h (ASR_CLONED, functions built per vector unit).
 *
 * This header is also the cffi cdef: asr/_build.py runs it through the C preprocessor (the state
 * fields are an X-macro list, core/asr_fields.h) and hands the result to cdef(), so keep it and the
 * headers it includes to plain typedefs, enums, prototypes and macros that expand to them (no
 * system includes, no static inline functions).
 *
 * Naming
 *   asr_<thing>            types (structs, enums, function pointer types)
 *   asr_<thing>_<verb>()   functions; functions acting on a batch take it as first argument
 *   ASR_<NAME>             enum constants
 * Everything named asr_ is public and declared in these headers. Private helpers shared between
 * the core's files carry no asr_ prefix and are declared only in private headers, next to their
 * sources: core/internal.h (joints and models: num_*, the built-in model_* definitions),
 * core/batch.h, core/motor.h (motor_*), core/simd.h, cpr/rod.h, cpr/cpr_internal.h (cpr_*),
 * cpr/linalg.h (la_*), cpr/rot3.h (r3_*); helpers used in one file are static. The extension
 * is built with hidden symbol visibility: none is exported.
 *
 * Units are SI everywhere: rad, rad/s, N m, N m/rad, N m s/rad, kg m^2, s, V, A, ohm.
 * Inputs of the batch are (n_inst x n_joint) row-major: element (i, j) at i*n_joint + j. The batch
 * state is (n_inst x n_joint x ASR_NFIELD): all fields of one joint are contiguous.
 * Every public function returns an asr_status and never aborts or exits.
 */
#ifndef ASR_H
#define ASR_H

#include "core/asr_batch.h"
#include "engine/asr_engine.h"
#include "interaction/asr_interaction.h"
#include "cpr/asr_cpr.h"

#endif
