/* cpr.c - continuum parallel robots: the Levenberg-Marquardt solver of the residuals of
 * docs/cpr.md (cpr_legs.c), single solves, warm-started solves and batches.
 *
 * Steps: a square system takes Newton's step from the inverse Jacobian, kept up to date by
 * Sherman-Morrison with each Broyden update (O(n^2) per step); Levenberg-Marquardt on the normal
 * equations (Nielsen's damping rule) takes over when that step fails, and for least-squares
 * systems. The linear algebra is linalg.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "asr_cpr.h"
#include "cpr_internal.h"
#include "linalg.h"
#include "core/asr_threads.h"

enum {
    S = ASR_ROD_NSTATE
};

/* ------------------------------------------------------------------ Levenberg-Marquardt */

static asr_status check_options(const asr_cpr_options* o) {
    if (!o) return ASR_ERR_NULL;
    if (o->n_grid < 2 || !(o->tol > 0.0) || o->max_iter < 1 || o->threads < 1) return ASR_ERR_RANGE;
    return ASR_OK;
}

/* What a solve may take from the previous one and hand to the next (each pointer NULL: not
 * carried; each flag says whether its buffer holds a valid value). */
typedef struct lm_carry {
    double* J; /* m x n Jacobian */
    int* have_J;
    double* H; /* n x n its inverse (square systems) */
    int* have_H;
    double* tips; /* n_leg x 18 rod tips at x's leg unknowns */
    int* have_tips;
} lm_carry;

/* Work space of one solve. */
typedef struct lm_work {
    int m, n, square, have_H;
    double *r_try, *y, *Jd, *tips_try, *weq_try, *scratch_r, *scratch_w, *x_try;
    double *H, *G, *g, *A, *d;
} lm_work;

/* One block for the whole work space (and the Jacobian unless carried); NULL when out of
 * memory. */
static double* lm_alloc(cpr_solver* s, lm_work* w, const lm_carry* c) {
    int n_leg = s->robot->n_leg, m = s->nres, n = s->nact;
    /* 6 residual-sized, 2 tip sets, 3 plate-wrench sets, x_try, J and A, H and G, d */
    size_t need = (size_t)m * 6 + ((size_t)S * 2 + 6 * 3) * n_leg + (size_t)s->nx +
                  (size_t)m * n * 2 + (size_t)n * n * 2 + (size_t)n;
    double* mem = (double*)malloc(need * sizeof(double));
    if (!mem) return NULL;
    double* p = mem;
    w->m = m, w->n = n, w->square = m == n, w->have_H = 0;
    s->r = p, p += m;
    w->r_try = p, p += m;
    w->y = p, p += m;
    w->Jd = p, p += m;
    w->scratch_r = p, p += m;
    w->g = p, p += m;
    s->tips = p, p += (size_t)S * n_leg;
    w->tips_try = p, p += (size_t)S * n_leg;
    s->weq = p, p += 6 * (size_t)n_leg;
    w->weq_try = p, p += 6 * (size_t)n_leg;
    w->scratch_w = p, p += 6 * (size_t)n_leg;
    w->x_try = p, p += s->nx;
    s->J = (c && c->J) ? c->J : p;
    p += (size_t)m * n;
    w->A = p, p += (size_t)m * n; /* m >= n: also J^T for the normal equations */
    w->H = (c && c->H) ? c->H : p;
    p += (size_t)n * n;
    w->G = p, p += (size_t)n * n;
    w->d = p;
    return mem;
}

/* Evaluate x + d (d on the active unknowns) and keep it when it lowers |r| (*rn): 1 if kept. */
static int try_step(cpr_solver* s, lm_work* w, double* rn) {
    memcpy(w->x_try, s->x, (size_t)s->nx * sizeof(double));
    for (int j = 0; j < s->nact; ++j) w->x_try[s->act[j]] += w->d[j];
    asr_status se = cpr_evaluate(s, w->x_try, w->r_try, w->tips_try, w->weq_try);
    double rt = se == ASR_OK ? la_norm(w->r_try, w->m) : INFINITY;
    if (!(rt < *rn)) return 0;
    *rn = rt;
    for (int k = 0; k < w->m; ++k) w->y[k] = w->r_try[k] - s->r[k];
    memcpy(s->x, w->x_try, (size_t)s->nx * sizeof(double));
    memcpy(s->r, w->r_try, (size_t)w->m * sizeof(double));
    memcpy(s->tips, w->tips_try, (size_t)S * s->robot->n_leg * sizeof(double));
    memcpy(s->weq, w->weq_try, 6 * (size_t)s->robot->n_leg * sizeof(double));
    return 1;
}

/* A fresh forward-difference Jacobian at x (and its inverse for a square system). */
static asr_status fresh_jacobian(cpr_solver* s, lm_work* w) {
    cpr_plate_pose(s, s->x, s->P, s->Rp);
    asr_status st = cpr_jac_legs(s);
    if (st != ASR_OK) return st;
    if (s->problem == ASR_CPR_DGM) cpr_jac_plate(s, w->scratch_r, w->scratch_w);
    w->have_H = w->square && la_invert(s->J, w->n, w->H, w->A) == 0;
    return ASR_OK;
}

/* Damped steps (G + lambda diag G) d = -J^T r, lambda raised until one lowers |r| (*rn); an
 * updated (not fresh) J gets one try only. Nielsen's rule moves lambda by the gain ratio rho
 * (actual over predicted decrease of |r|^2): down by up to 3 after a good step, up by a
 * doubling factor nu after each failure. Returns 1 if a step was kept. */
static int lm_steps(cpr_solver* s, lm_work* w, int fresh, double* lambda, double* nu, double* rn) {
    la_normal_eq(s->J, s->r, w->m, w->n, w->G, w->g, w->A);
    while (*lambda < 1e12) {
        if (la_damped_solve(w->G, w->g, w->n, *lambda, w->A, w->d) != 0) {
            *lambda = *lambda * *nu + 1e-12;
            *nu *= 2.0;
            continue;
        }
        double rn0 = *rn, pred = 0.0; /* predicted decrease of |r|^2: d^T (g + lambda D d) */
        for (int j = 0; j < w->n; ++j)
            pred += w->d[j] * (w->g[j] + *lambda * w->G[(size_t)j * w->n + j] * w->d[j]);
        if (try_step(s, w, rn)) {
            double rho = pred > 0.0 ? (rn0 * rn0 - *rn * *rn) / pred : 1.0, t = 2.0 * rho - 1.0;
            *lambda = fmax(*lambda * fmax(1.0 / 3.0, 1.0 - t * t * t), 1e-12);
            *nu = 2.0;
            return 1;
        }
        if (!fresh) return 0; /* an updated J that fails: recompute it before raising lambda */
        *lambda *= *nu;
        *nu *= 2.0;
    }
    return 0;
}

/* Below this damping LM's step is Newton's to round-off; a square system then takes
 * -J^-1 r from the carried inverse (O(n^2)) instead of forming and factoring J^T J (O(n^3)). */
#define LAMBDA_NEWTON 1e-9

/* Levenberg-Marquardt with a lazily refreshed Jacobian: a forward-difference Jacobian costs a
 * rod integration per leg unknown, a trial step only one per leg, so after an accepted step J
 * (and its inverse) gets a Broyden update instead, and is recomputed only when a step with an
 * updated J fails or leaves more than 70 % of the residual norm. The answer never depends on J:
 * convergence is judged on the exact residual. */
static asr_status lm_solve(cpr_solver* s, const asr_cpr_options* opt, asr_cpr_report* rep,
                           const lm_carry* c) {
    const asr_cpr* rb = s->robot;
    int n_leg = rb->n_leg;
    lm_work w;
    double* mem = lm_alloc(s, &w, c);
    if (!mem) return ASR_ERR_NOMEM;
    int fresh_local = 0, *have_J = (c && c->J) ? c->have_J : &fresh_local;
    if (*have_J && w.square) /* a carried J: its carried inverse, or a new one */
        w.have_H = (c->H && *c->have_H) || la_invert(s->J, w.n, w.H, w.A) == 0;

    asr_status st = ASR_OK;
    if (c && c->tips && *c->have_tips) { /* the rods at x are known: only the plate is new */
        memcpy(s->tips, c->tips, (size_t)S * n_leg * sizeof(double));
        cpr_plate_pose(s, s->x, s->P, s->Rp);
        for (int i = 0; i < n_leg; ++i)
            cpr_leg_tip(&rb->legs[i], s->tips + S * i, s->P, s->Rp, s->r + s->roff[i],
                        s->weq + 6 * i);
        cpr_equilibrium(s, s->weq, s->r);
    } else {
        st = cpr_evaluate(s, s->x, s->r, s->tips, s->weq);
    }
    double rn = st == ASR_OK ? la_norm(s->r, w.m) : INFINITY;
    double lambda = LAMBDA_NEWTON, nu = 2.0;
    int it = 0;
    while (st == ASR_OK && rn >= opt->tol && it < opt->max_iter) {
        ++it;
        int fresh = !*have_J;
        if (fresh) {
            st = fresh_jacobian(s, &w);
            if (st != ASR_OK) break;
            *have_J = 1;
        }
        double rn_old = rn;
        int improved = 0, newton = w.have_H && lambda <= LAMBDA_NEWTON;
        if (newton) {
            la_newton_step(w.H, s->r, w.n, w.d);
            improved = try_step(s, &w, &rn);
            if (!improved && fresh) { /* LM's first try would be the same step */
                lambda *= nu;
                nu *= 2.0;
            }
        }
        if (newton && improved) lambda = fmax(lambda * 0.1, 1e-12);
        if (!improved && (fresh || !newton)) improved = lm_steps(s, &w, fresh, &lambda, &nu, &rn);
        if (!improved && fresh) break; /* stuck: a local minimum of |r| that is not a root */
        /* stale: recompute next time. Even an exact Newton step gains only a factor ~3 on the
         * first step of a warm-started pose (the rods are strongly nonlinear), so a factor 10
         * would refresh J at nearly every pose; a step that keeps 70 % of |r| is too slow. */
        if (!improved || rn > 0.7 * rn_old) {
            *have_J = 0;
        } else if (rn >= opt->tol) {
            la_broyden(s->J, w.m, w.n, w.d, w.y, w.Jd);
            if (w.have_H) w.have_H = la_broyden_inverse(w.H, w.n, w.d, w.y, w.Jd, w.g) == 0;
        }
    }
    if (c && c->H) *c->have_H = *have_J && w.have_H;
    if (c && c->tips) {
        *c->have_tips = st == ASR_OK;
        if (st == ASR_OK) memcpy(c->tips, s->tips, (size_t)S * n_leg * sizeof(double));
    }
    if (rep) {
        rep->converged = st == ASR_OK && rn < opt->tol;
        rep->iterations = it;
        rep->residual_norm = rn;
    }
    free(mem);
    return st;
}

/* One solve of x in place, carrying what c holds (NULL: nothing). */
static asr_status solve_with(const asr_cpr* robot, int problem, double* x,
                             const asr_cpr_options* opt, asr_cpr_report* report,
                             const lm_carry* c) {
    asr_status st = cpr_check_robot(robot);
    if (st == ASR_OK) st = check_options(opt);
    if (st != ASR_OK) return st;
    if (!x) return ASR_ERR_NULL;
    if (problem != ASR_CPR_IGM && problem != ASR_CPR_DGM) return ASR_ERR_RANGE;
    for (int k = 0, nx = asr_cpr_nx(robot); k < nx; ++k)
        if (!isfinite(x[k])) return ASR_ERR_INPUT;
    cpr_solver s;
    if (cpr_solver_init(&s, robot, problem, opt->n_grid, opt->threads) != 0) {
        cpr_solver_free(&s);
        return ASR_ERR_NOMEM;
    }
    if (s.nact > s.nres) { /* fewer equations than unknowns: not a well-posed model */
        cpr_solver_free(&s);
        return ASR_ERR_MODEL;
    }
    s.x = x;
    st = lm_solve(&s, opt, report, c);
    cpr_solver_free(&s);
    return st;
}

int asr_cpr_carry_size(const asr_cpr* robot, int problem) {
    int m = asr_cpr_nres(robot), n = asr_cpr_nact(robot, problem);
    if (m < 0 || n < 0) return -1;
    return m * n + n * n + S * robot->n_leg;
}

asr_status asr_cpr_solve_warm(const asr_cpr* robot, int problem, double* x,
                              const asr_cpr_options* opt, asr_cpr_report* report, double* carry,
                              int* flags) {
    if (!carry) return solve_with(robot, problem, x, opt, report, NULL);
    if (!flags) return ASR_ERR_NULL;
    asr_status st = cpr_check_robot(robot);
    if (st != ASR_OK) return st;
    if (problem != ASR_CPR_IGM && problem != ASR_CPR_DGM) return ASR_ERR_RANGE;
    int m = asr_cpr_nres(robot), n = asr_cpr_nact(robot, problem);
    int have_J = (*flags & ASR_CPR_CARRY_J) != 0;
    int have_H = have_J && (*flags & ASR_CPR_CARRY_INV) != 0;
    int have_tips = (*flags & ASR_CPR_CARRY_TIPS) != 0;
    lm_carry c = {
        carry,     &have_J, carry + (size_t)m * n, &have_H, carry + (size_t)m * n + (size_t)n * n,
        &have_tips};
    st = solve_with(robot, problem, x, opt, report, &c);
    if (st == ASR_OK || st == ASR_ERR_NONFINITE) /* the solve ran: its carry is what it says */
        *flags = (have_J ? ASR_CPR_CARRY_J : 0) | (have_H ? ASR_CPR_CARRY_INV : 0) |
                 (have_tips ? ASR_CPR_CARRY_TIPS : 0);
    return st;
}

asr_status asr_cpr_solve(const asr_cpr* robot, int problem, double* x, const asr_cpr_options* opt,
                         asr_cpr_report* report) {
    return solve_with(robot, problem, x, opt, report, NULL);
}

/* One target of a batch: x = the start point with the target written into it. */
static void set_target(const asr_cpr* rb, int problem, const double* target, double* x) {
    int nx = asr_cpr_nx(rb);
    if (problem == ASR_CPR_IGM) {
        memcpy(x + nx - 6, target, 6 * sizeof(double));
        return;
    }
    for (int i = 0, xo = 0; i < rb->n_leg; ++i) { /* q is the last unknown of each leg */
        xo += cpr_leg_nw(&rb->legs[i]) + 1;
        x[xo - 1] = target[i];
    }
}

typedef struct batch_job {
    const asr_cpr* robot;
    int problem, nx, width, n;
    const double* targets;
    const double* x0;
    asr_cpr_options opt; /* threads 1: the batch's threads take whole targets */
    double* xs;
    asr_cpr_report* reports;
} batch_job;

/* Independent targets [k0, k1), each from x0. */
static asr_status solve_range(void* ctx, int k0, int k1) {
    batch_job* b = (batch_job*)ctx;
    for (int k = k0; k < k1; ++k) {
        double* x = b->xs + (size_t)k * b->nx;
        memcpy(x, b->x0, (size_t)b->nx * sizeof(double));
        set_target(b->robot, b->problem, b->targets + (size_t)k * b->width, x);
        asr_status st = asr_cpr_solve(b->robot, b->problem, x, &b->opt, b->reports + k);
        if (st != ASR_OK) return st;
    }
    return ASR_OK;
}

/* A warm-started chain: each target from the previous solution, carrying the Jacobian and (IGM:
 * the leg unknowns a target starts from are those the previous one ended with) the rod tips. */
static asr_status solve_chain(const batch_job* b, const asr_cpr_options* opt) {
    double* carry =
        (double*)malloc((size_t)asr_cpr_carry_size(b->robot, b->problem) * sizeof(double));
    if (!carry) return ASR_ERR_NOMEM;
    int flags = 0, keep = b->problem == ASR_CPR_IGM ? ~0 : ~ASR_CPR_CARRY_TIPS;
    asr_status st = ASR_OK;
    for (int k = 0; k < b->n && st == ASR_OK; ++k) {
        double* x = b->xs + (size_t)k * b->nx;
        memcpy(x, k ? x - b->nx : b->x0, (size_t)b->nx * sizeof(double));
        set_target(b->robot, b->problem, b->targets + (size_t)k * b->width, x);
        flags &= keep; /* the DGM moves the legs' q: the rods must be integrated again */
        st = asr_cpr_solve_warm(b->robot, b->problem, x, opt, b->reports + k, carry, &flags);
    }
    free(carry);
    return st;
}

asr_status asr_cpr_solve_batch(const asr_cpr* robot, int problem, int n, const double* targets,
                               const double* x0, int warm, const asr_cpr_options* opt, double* xs,
                               asr_cpr_report* reports) {
    asr_status st = cpr_check_robot(robot);
    if (st == ASR_OK) st = check_options(opt);
    if (st != ASR_OK) return st;
    if (!targets || !x0 || !xs || !reports) return ASR_ERR_NULL;
    if (n < 0 || (problem != ASR_CPR_IGM && problem != ASR_CPR_DGM)) return ASR_ERR_RANGE;
    batch_job b = {robot,
                   problem,
                   asr_cpr_nx(robot),
                   problem == ASR_CPR_IGM ? 6 : robot->n_leg,
                   n,
                   targets,
                   x0,
                   *opt,
                   xs,
                   reports};
    for (int k = 0; k < n; ++k) { /* what a target never attempted (after an error) reports */
        reports[k].converged = 0;
        reports[k].iterations = 0;
        reports[k].residual_norm = INFINITY;
    }
    if (warm) return solve_chain(&b, opt);
    b.opt.threads = 1;
    return asr_parallel_for(opt->threads < n ? opt->threads : (n > 0 ? n : 1), n, solve_range, &b);
}
