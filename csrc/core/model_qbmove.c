/* model_qbmove.c - agonistic-antagonistic VSAs with two sinh springs: the qbmove Advanced of the
 * 2021 toolbox ([Mengacci2021]) and the 2015 qbmove plugin ([Parnenzini2015]), the latter with its voltage
 * drive, friction and command clamp, and without the published plugin's sign and scale bugs.
 * Defaults and reference ranges are defined here, the parameters in model_params.h, the formulas
 * in springs.h (BUILTIN_CALLBACKS makes the model's callbacks from them). */
#include <math.h>

#include "internal.h"
#include "model_params.h"

#define TWO_PI 6.283185307179586

/* ---------------------------------------------------------------- qbmove_advanced */

static const asr_param_spec qbmove_advanced_params[] = MODEL_PARAM_SPECS(QBMOVE_ADVANCED);

BUILTIN_CALLBACKS(qbmove_advanced, model_qbmove_advanced)

const asr_model_def model_qbmove_advanced = {
    .name = "qbmove_advanced",
    .doc = "qbmove Advanced agonistic-antagonistic VSA ([Mengacci2021]); map th = eq +/- preset",
    .nmotor = 2,
    .nparam = QBMOVE_ADVANCED_NPARAM,
    .params = qbmove_advanced_params,
    .elastic = qbmove_advanced_elastic,
    .refmap = qbmove_advanced_refmap,
    .ref2 = {.meaning = "preset angle: motors at eq +/- preset",
             .unit = "rad",
             .kind = ASR_PRESET_REF,
             .lo = 0.0,
             .hi = 0.8,
             .soft = 0.2,
             .stiff = 0.6},
};

/* ---------------------------------------------------------------- qbmove (2015 plugin) */

static const asr_param_spec qbmove_params[] = MODEL_PARAM_SPECS(QBMOVE);

BUILTIN_CALLBACKS(qbmove, model_qbmove)

/* th1 = eq + s, th2 = eq - s, clamped to |th| <= th_max (the paper's 2(q + s) counts ticks of
 * half resolution; in radians the factor 2 disappears). */
/* [Parnenzini2015]: J, b, voltage drive (Kt, Kb of the paper, R, 8 V, dead zone 0.3), static friction
 * 0.8 N m on the motors and 0.01 N m on the shaft with presliding width 0.03 rad, PD at 1 kHz.
 * Gains are given per encoder tick (65536 ticks per turn) on a normalised command; in SI:
 * kp = 0.001 * 65536/(2 pi) per rad, and the derivative, a difference of ticks per 1 ms sample,
 * kd = 0.008 * 65536/(2 pi) * 1e-3 per rad/s. */
static const asr_param_default qbmove_defaults[] = {
    {ASR_P_MOTOR_J, 0.001},
    {ASR_P_MOTOR_D, 0.01},
    {ASR_P_FRICTION, 0.8},
    {ASR_P_FRICTION_K, 0.8 / 0.03},
    {ASR_P_KP, 0.001 * 65536.0 / TWO_PI},
    {ASR_P_KI, 0.0},
    {ASR_P_KD, 0.008 * 65536.0 / TWO_PI * 1e-3},
    {ASR_P_CTRL_PERIOD, 1e-3},
    {ASR_P_DRIVE, 1.0},
    {ASR_P_KT, 0.8},
    {ASR_P_KB, 0.3},
    {ASR_P_R, 2.3},
    {ASR_P_V_SUPPLY, 8.0},
    {ASR_P_DEAD_ZONE, 0.3},
    {ASR_P_LINK_FRICTION, 0.01},
    {ASR_P_LINK_FRICTION_K, 0.01 / 0.03},
};

const asr_model_def model_qbmove = {
    .name = "qbmove",
    .doc = "2015 qbmove plugin ([Parnenzini2015]): sinh springs without clamp, voltage drive, Dahl "
           "friction; map th = eq +/- preset clamped to th_max",
    .nmotor = 2,
    .nparam = QBMOVE_NPARAM,
    .params = qbmove_params,
    .ndefault = 16,
    .defaults = qbmove_defaults,
    .elastic = qbmove_elastic,
    .refmap = qbmove_refmap,
    .ref2 = {.meaning = "preset angle: motors at eq +/- preset, clamped to th_max",
             .unit = "rad",
             .kind = ASR_PRESET_REF,
             .lo = 0.0,
             .hi = 1.0,
             .soft = 0.2,
             .stiff = 0.6},
};
