/* asr.h - public C API of the asr compliant-actuator core.
 *
 * The API is split by topic; this umbrella header includes them all, in this order:
 *   asr_status.h   status codes
 *   asr_model.h    operation modes, parameter specs, compliance models (model definitions, the
 *                  second reference / stiffness preset, elastic and refmap callbacks)
 *   asr_batch.h    the batch: state fields (listed in asr_fields.h), create, parameters, step
 *   asr_engine.h   coupling a batch to a rigid-body engine
 *   asr_interaction.h  interaction control: admittance, direct force, FSM, F/T sensor, IK
 *   asr_cpr.h      continuum parallel robots: Cosserat rods, the CPR solver, rotation vectors
 *
 * This header is also the cffi cdef: asr/_build.py runs it through the C preprocessor (the state
 * fields are an X-macro list, asr_fields.h) and hands the result to cdef(), so keep it and the
 * headers it includes to plain typedefs, enums, prototypes and macros that expand to them (no
 * system includes, no static inline functions).
 *
 * Naming
 *   asr_<thing>            types (structs, enums, function pointer types)
 *   asr_<thing>_<verb>()   functions; functions acting on a batch take it as first argument
 *   ASR_<NAME>             enum constants
 * Everything named asr_ is public and declared in these headers. Private helpers shared between
 * the core's files carry no asr_ prefix and are declared only in private headers: internal.h
 * (joints and models: num_*, the built-in model_* definitions), batch.h, motor.h (motor_*),
 * threads.h, rod.h, cpr_internal.h (cpr_*), linalg.h (la_*), rot3.h (r3_*); helpers used in
 * one file are static. The extension is built with hidden symbol visibility: none is exported.
 *
 * Units are SI everywhere: rad, rad/s, N m, N m/rad, N m s/rad, kg m^2, s, V, A, ohm.
 * Inputs of the batch are (n_inst x n_joint) row-major: element (i, j) at i*n_joint + j. The batch
 * state is (n_inst x n_joint x ASR_NFIELD): all fields of one joint are contiguous.
 * Every public function returns an asr_status and never aborts or exits.
 */
#ifndef ASR_H
#define ASR_H

#include "asr_status.h"
#include "asr_model.h"
#include "asr_batch.h"
#include "asr_engine.h"
#include "asr_interaction.h"
#include "asr_cpr.h"

#endif
