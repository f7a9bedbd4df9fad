/* SPDX-License-Identifier: Apache-2.0 */
/* batch_permutation: a random permutation of the batch's sample indices, one int32 scalar per
 * sample (DALI's fn.batch_permutation, for fn.permute_batch). allow_repetitions draws each index
 * on its own (indices may repeat); no_fixed_points makes index i never land at sample i (a
 * batch of one has no such permutation: it is an error). Drawn from Philox keyed by the
 * instance's seed and the batch's first global sample number, so a batch gets the same
 * permutation whatever the threads. */
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"
#include "core/rng.h"

#include <stdlib.h>

static const sl__arg_schema bp_args[] = {
    {"allow_repetitions", SL_ARG_BOOL, "False", "indices may repeat (drawn independently)", 0,
     NULL},
    {"no_fixed_points", SL_ARG_BOOL, "False", "no index i at sample i", 0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct bp_state {
    bool rep, nofix;
    uint64_t seed;
} bp_state;

static sl_status bp_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    bp_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->rep = sl__args_bool(a, "allow_repetitions");
    s->nofix = sl__args_bool(a, "no_fixed_points");
    s->seed = init->seed;
    *out = s;
    return SL_OK;
}

/* out: batch int32 scalars */
static sl_status bp_setup(void *state, sl__op_io *io, sl_err *err) {
    bp_state *s = state;
    int n = io->batch;
    if (s->nofix && n == 1)
        return sl_err_set(err, SL_EINVAL,
                          "batch_permutation: no_fixed_points with a batch of one sample");
    sl_tlist *out = io->out[0];
    SL_TRY(sl_tlist_reset(out, n, SL_DTYPE_I32, 0, sl_cpu(), err));
    static const int64_t none[1] = {0};
    SL_TRY(sl_tlist_alloc(out, none, err)); /* scalars: no extents read */
    sl__rng_philox r;
    sl__rng_philox_init(&r, io->seed ? io->seed : s->seed, (uint64_t)io->sample_base);
    int32_t *v = sl__malloc((size_t)(n ? n : 1) * sizeof *v, err);
    if (!v) return SL_ENOMEM;
    if (s->rep) {
        for (int i = 0; i < n; i++) {
            uint64_t k = sl__rng_philox_below(&r, (uint64_t)(s->nofix ? n - 1 : n));
            v[i] = (int32_t)(s->nofix && k >= (uint64_t)i ? k + 1 : k); /* skip i itself */
        }
    } else {
        for (int i = 0; i < n; i++) v[i] = i;
        if (s->nofix) { /* Sattolo's shuffle: one cycle through all, so no fixed point */
            for (int i = n - 1; i > 0; i--) {
                int j = (int)sl__rng_philox_below(&r, (uint64_t)i);
                int32_t t = v[i];
                v[i] = v[j], v[j] = t;
            }
        } else { /* Fisher-Yates */
            for (int i = n - 1; i > 0; i--) {
                int j = (int)sl__rng_philox_below(&r, (uint64_t)i + 1);
                int32_t t = v[i];
                v[i] = v[j], v[j] = t;
            }
        }
    }
    for (int i = 0; i < n; i++) *(int32_t *)out->data[i] = v[i];
    free(v);
    return SL_OK;
}

const sl__op_def sl__batch_permutation_op = {
    .name = "batch_permutation",
    .doc = "A random permutation of the batch's sample indices (one int32 per sample).",
    .min_inputs = 0,
    .max_inputs = 0,
    .args = bp_args,
    .devices = SL_OPDEV_CPU,
    .flags = SL_OPF_RANDOM,
    .create = bp_create,
    .setup = bp_setup,
    .destroy = free,
};
