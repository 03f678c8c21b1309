/* asr_fields.h - the joint state fields, listed once.
 *
 * X(ID, name, unit, doc) for every field, in state-record order: ID makes the enumerator
 * ASR_F_<ID> (asr_batch.h), name the field's name (asr_state_field_name, Python's asr.FIELDS), unit
 * its SI unit ("" for counts, flags and fields whose unit depends on the mode; doc says it) and
 * doc its description without the unit. The order is the record layout: indices are stored in
 * records, so a new field goes at the end of its block.
 *
 * ASR_STATE_FIELDS_CHECKED: computed by the step and checked for NaN/inf after every step.
 * ASR_STATE_FIELDS_COPIED: copies of checked inputs, and counters.
 * Included by asr_batch.h, part of asr.h, which is also the cffi cdef (asr/_build.py preprocesses
 * it): macros only.
 */
#ifndef ASR_FIELDS_H
#define ASR_FIELDS_H

#define ASR_STATE_FIELDS_CHECKED(X)                                                                \
    X(TAU_JOINT, tau_joint, "N m", "tau_link + tau_ext: the torque the rigid-body engine applies") \
    X(TAU_LINK, tau_link, "N m",                                                                   \
      "actuator torque on the link: the elastic torque tau_el1 + tau_el2 (compliant modes) or "    \
      "the commanded or link-PID torque (rigid modes), minus the output-shaft friction tau_fq")    \
    X(STIFFNESS, stiffness, "N m/rad", "link stiffness of the springs, -d(tau_el1 + tau_el2)/dq")  \
    X(TAU_EL1, tau_el1, "N m", "elastic torque of spring 1 on the link")                           \
    X(TAU_EL2, tau_el2, "N m", "elastic torque of spring 2 on the link")                           \
    X(DEFL1, defl1, "rad", "deflection of spring 1 after clamping")                                \
    X(DEFL2, defl2, "rad", "deflection of spring 2 after clamping")                                \
    X(TH1, th1, "rad", "motor 1 angle")                                                            \
    X(TH2, th2, "rad or m",                                                                        \
      "motor 2 angle; adjuster models: the stiffness input (awas2: the pivot position, m)")        \
    X(TH1D, th1d, "rad/s", "motor 1 velocity")                                                     \
    X(TH2D, th2d, "rad/s or m/s", "motor 2 velocity; adjuster models: the stiffness input's rate") \
    X(TAU_M1, tau_m1, "N m", "motor 1 drive torque after limits")                                  \
    X(TAU_M2, tau_m2, "N m", "motor 2 drive torque after limits")                                  \
    X(TAU_F1, tau_f1, "N m", "motor 1 friction torque")                                            \
    X(TAU_F2, tau_f2, "N m", "motor 2 friction torque")                                            \
    X(TAU_FQ, tau_fq, "N m", "output-shaft friction torque (already subtracted in tau_link)")      \
    X(W1, w1, "rad", "motor 1 friction stick point")                                               \
    X(W2, w2, "rad", "motor 2 friction stick point")                                               \
    X(WQ, wq, "rad", "output-shaft friction stick point")                                          \
    X(INT1, int1, "rad s", "motor 1 PID error integral")                                           \
    X(INT2, int2, "rad s", "motor 2 PID error integral")                                           \
    X(INTQ, intq, "rad s", "link PID error integral")                                              \
    X(CMD1, cmd1, "",                                                                              \
      "motor 1 controller output held between ticks: a torque in N m, or with drive = 1 a "        \
      "voltage command normalised to v_supply")                                                    \
    X(CMD2, cmd2, "",                                                                              \
      "motor 2 controller output held between ticks: a torque in N m, or with drive = 1 a "        \
      "voltage command normalised to v_supply")                                                    \
    X(CTRL_TIMER, ctrl_timer, "s", "time until the next controller tick")

#define ASR_STATE_FIELDS_COPIED(X)                                                                 \
    X(Q, q, "rad", "link angle seen by the last step")                                             \
    X(QD, qd, "rad/s", "link velocity seen by the last step")                                      \
    X(REF1, ref1, "", "first reference of the last step (unit per mode)")                          \
    X(REF2, ref2, "", "second reference of the last step (unit per mode)")                         \
    X(TAU_EXT, tau_ext, "N m", "external link torque of the last step")                            \
    X(CLAMPED, clamped, "", "springs at their deflection limit in the last step (0, 1 or 2)")      \
    X(CLAMP_STEPS, clamp_steps, "",                                                                \
      "steps since reset with at least one spring at its deflection limit")

#define ASR_STATE_FIELDS(X) ASR_STATE_FIELDS_CHECKED(X) ASR_STATE_FIELDS_COPIED(X)

#endif
