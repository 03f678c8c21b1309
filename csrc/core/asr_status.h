/* asr_status.h - status codes returned by every public function.
 * Part of the public C API: included by asr.h, whose conventions (naming, SI units, layouts,
 * no system includes: this is also the cffi cdef) apply here.
 */
#ifndef ASR_API_STATUS_H
#define ASR_API_STATUS_H

/* ------------------------------------------------------------------ status codes */

typedef enum asr_status {
    ASR_OK = 0,
    ASR_ERR_NULL = 1,      /* a required pointer was NULL */
    ASR_ERR_RANGE = 2,     /* an argument or parameter is outside its valid range */
    ASR_ERR_MODEL = 3,     /* unknown model, or a mode the model does not support */
    ASR_ERR_PARAM = 4,     /* unknown parameter index */
    ASR_ERR_NONFINITE = 5, /* NaN or inf in the state after a step (instance frozen) */
    ASR_ERR_INPUT = 6,     /* NaN or inf in an input (q, qd, refs, external torques) */
    ASR_ERR_NOMEM = 7,     /* allocation failed */
    ASR_ERR_CALLBACK = 8,  /* a user model callback returned non-zero */
    ASR_ERR_DIVERGED = 9   /* a link turned faster than link_vel_max (instance frozen) */
} asr_status;

/* More motor sub-steps per step than this is a configuration error (ASR_ERR_RANGE). */
enum {
    ASR_MAX_SUBSTEPS = 1000000
};

#endif
