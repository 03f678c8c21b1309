/* interaction.h - the interaction controller's per-step pieces used by the engine rollout
 * (private; the public side is asr_interaction.h). */
#ifndef ASR_INTERACTION_H
#define ASR_INTERACTION_H

#include "batch.h"

/* Exact zero-order-hold discretisation of the admittance law along the three task axes for a
 * step dt: per axis [z, zd](n+1) = Phi [z, zd](n) + Gamma f~(n), stored as Phi (4, row-major)
 * then Gamma (2): 18 doubles. */
enum { IC_ZOH_SIZE = 18 };
void ic_zoh(const asr_ic_config* cfg, double dt, double* coef);

/* Doubles of scratch one thread needs for the inverse kinematics. */
size_t ic_scratch_size(const asr_interaction* ic, int n_joint);

/* Instance i's controller for one step, after the engine's step1: sensor, FSM, law, inverse
 * kinematics; writes the first reference of each actuated joint into refs (2 per joint). */
void ic_control(const asr_batch* b, const asr_engine* e, const asr_interaction* ic, int i,
                double dt, const double* coef, double* scratch, double* refs);

/* The external wrench of instance i at step t into the tool body (before step2); ic_release
 * removes it after the rollout. */
void ic_apply_wrench(const asr_interaction* ic, int i, int t);
void ic_release_wrench(const asr_interaction* ic, int i);

/* Instance i's controller outputs of step t into the record (ASR_IC_NREC values). */
void ic_record(const asr_interaction* ic, int i, int t, int nstep);

#endif
