/* SPDX-License-Identifier: Apache-2.0 */
/* sl_trainer: the data-parallel step over K replicas in one process (the seed's update_parallel).
 * Each replica owns a model and an optimiser on its device and one sl_comm rank; one worker thread
 * per replica runs, per step: forward/backward on its shard -> all-reduce (average) of the flat
 * gradient
 * -> the optimiser update -> all-reduce (average) of its loss. Since the average is bit-identical
 * on every rank and every replica applies the same update to the same values, the replicas never
 * drift apart. Shapes are checked on the calling thread before any replica starts, so bad input
 * never leaves the group half-way through a collective; a failure inside a replica aborts the group
 * (sl_comm_abort) so the others return instead of waiting, and marks the trainer broken.
 * CUDA replicas (one GPU each, all replicas on GPUs): the step runs on the model's stream without
 * waiting in between -- forward/backward (a CUDA graph), one NCCL all-reduce (average) of the
 * nparams gradients plus the loss in the slot after them, the optimiser kernel, the loss copied
 * into a pinned slot of its own -- and waits only when it reads a loss back: sl_trainer_step for
 * its own, sl_trainer_step_async for the step before it, so that the host queues step n + 1 (and
 * fetches its batch) while the GPUs run step n. One GPU needs no all-reduce, and its whole step
 * (forward, backward, update, the loss copy) is a single CUDA graph. Without
 * caller-made comms, K > 1 GPUs get an NCCL group (ncclCommInitAll); one GPU needs none. */
#include "sluice/train.h"

#include "core/alloc.h"
#include "core/log.h"
#include "core/pool.h"
#include "train/mlp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct sl_trainer {
    sl_trainer_config cfg;
    int K;
    sl_mlp *models[SL_TRAINER_MAX_REPLICAS];
    sl_optim *optims[SL_TRAINER_MAX_REPLICAS];
    sl_comm *comms[SL_TRAINER_MAX_REPLICAS];
    int own_comms;
    sl__pool *pool; /* K workers; NULL for one replica (runs on the caller's thread) */
    int cuda;       /* all replicas on CUDA devices */
    int broken;
    sl_err broken_err;
    int in_flight;   /* a step was queued and not waited for (sl_trainer_step_async) */
    float held_loss; /* CPU replicas: that step's loss, held back until the next call */
};

void sl_trainer_config_default(sl_trainer_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    sl_mlp_config_default(&cfg->model);
    sl_optim_config_default(&cfg->optim);
    cfg->replicas = 1;
    cfg->devices[0] = sl_cpu();
}

sl_status sl_trainer_create(const sl_trainer_config *cfg, sl_trainer **out, sl_err *err) {
    SL_ASSERT(cfg != NULL && out != NULL);
    *out = NULL;
    const int K = cfg->replicas;
    if (K < 1 || K > SL_TRAINER_MAX_REPLICAS)
        return sl_err_set(err, SL_EINVAL, "trainer: %d replicas, need 1..%d", K,
                          SL_TRAINER_MAX_REPLICAS);
    sl_trainer *t = sl__calloc(1, sizeof *t, err);
    if (!t) return SL_ENOMEM;
    t->cfg = *cfg;
    t->cfg.comms = NULL;
    t->K = K;
    t->cuda = cfg->devices[0].kind == SL_DEVICE_CUDA;
    if (!t->cuda) sl__mlp_cpu_share_threads(K);
    sl_status st = SL_OK;
    for (int k = 1; k < K && st == SL_OK; k++)
        if ((cfg->devices[k].kind == SL_DEVICE_CUDA) != t->cuda)
            st = sl_err_set(err, SL_EINVAL, "trainer: replicas on CPUs and GPUs at once");
    for (int k = 0; k < K && st == SL_OK && t->cuda; k++)
        for (int j = 0; j < k; j++)
            if (cfg->devices[j].id == cfg->devices[k].id)
                st = sl_err_set(err, SL_EINVAL, "trainer: replicas %d and %d on one GPU (cuda:%d)",
                                j, k, cfg->devices[k].id);
    for (int k = 0; k < K && st == SL_OK; k++) {
        st = sl_mlp_create(&cfg->model, cfg->devices[k], &t->models[k], err);
        if (st == SL_OK)
            st = sl_optim_create(&cfg->optim, sl_mlp_num_params(t->models[k]), cfg->devices[k],
                                 &t->optims[k], err);
        if (st != SL_OK) sl_err_prefix(err, "trainer replica %d: ", k);
    }
    if (st == SL_OK) {
        if (cfg->comms) {
            for (int k = 0; k < K && st == SL_OK; k++) {
                t->comms[k] = cfg->comms[k];
                if (!t->comms[k]) st = sl_err_set(err, SL_EINVAL, "trainer: comms[%d] is NULL", k);
            }
            int size = st == SL_OK ? sl_comm_size(t->comms[0]) : 0;
            for (int k = 1; k < K && st == SL_OK; k++)
                if (sl_comm_size(t->comms[k]) != size)
                    st = sl_err_set(err, SL_EINVAL, "trainer: comms of different group sizes");
            for (int k = 0; k < K && st == SL_OK && t->cuda; k++)
                if (sl_comm_kind_of(t->comms[k]) != SL_COMM_NCCL && size > 1)
                    st = sl_err_set(err, SL_EINVAL,
                                    "trainer: GPU replicas need NCCL comms, comms[%d] is %s", k,
                                    sl_comm_kind_name(sl_comm_kind_of(t->comms[k])));
        } else if (t->cuda && K == 1) {
            t->comms[0] = NULL; /* one GPU: nothing to average */
        } else if (t->cuda) {
            sl_comm_config cc;
            memset(&cc, 0, sizeof cc);
            cc.kind = SL_COMM_NCCL;
            cc.size = K;
            cc.devices = cfg->devices;
            st = sl_comm_create(&cc, t->comms, K, NULL, err);
            if (st != SL_OK) sl_err_prefix(err, "trainer: NCCL group of %d GPUs: ", K);
            t->own_comms = st == SL_OK;
        } else {
            sl_comm_config cc;
            memset(&cc, 0, sizeof cc);
            cc.kind = SL_COMM_LOCAL;
            cc.size = K;
            st = sl_comm_create(&cc, t->comms, K, NULL, err);
            t->own_comms = st == SL_OK;
        }
    }
    if (st == SL_OK && K > 1) st = sl__pool_create(K, &t->pool, err);
    if (st != SL_OK) {
        sl_trainer_free(t);
        return st;
    }
    *out = t;
    return SL_OK;
}

void sl_trainer_free(sl_trainer *t) {
    if (!t) return;
    sl__pool_free(t->pool);
    for (int k = 0; k < t->K; k++) {
        sl_mlp_free(t->models[k]);
        sl_optim_free(t->optims[k]);
        if (t->own_comms && t->comms[k]) sl_comm_free(t->comms[k]);
    }
    free(t);
}

int sl_trainer_replicas(const sl_trainer *t) {
    return t->K;
}

sl_mlp *sl_trainer_model(sl_trainer *t, int k) {
    SL_ASSERT(k >= 0 && k < t->K);
    return t->models[k];
}

sl_optim *sl_trainer_optim(sl_trainer *t, int k) {
    SL_ASSERT(k >= 0 && k < t->K);
    return t->optims[k];
}

sl_status sl_trainer_sync(sl_trainer *t, sl_err *err) {
    if (t->K == 1) return SL_OK;
    size_t size;
    SL_TRY(sl_optim_serialize(t->optims[0], NULL, 0, &size, err));
    void *buf = sl__malloc(size, err);
    if (!buf) return SL_ENOMEM;
    sl_status st = sl_optim_serialize(t->optims[0], buf, size, &size, err);
    for (int k = 1; k < t->K && st == SL_OK; k++) {
        st = sl_mlp_copy_params(t->models[k], t->models[0], err);
        if (st == SL_OK) st = sl_optim_deserialize(t->optims[k], buf, size, err);
    }
    free(buf);
    return st;
}

/* ---- the step ---------------------------------------------------------------------------------
 */

/* What the replicas do: queue a step and take the loss of the one before it
 * (sl_trainer_step_async), queue one and take every loss (sl_trainer_step), or only take every loss
 * (sl_trainer_wait). */
typedef enum { STEP_QUEUE, STEP_QUEUE_WAIT, STEP_WAIT } step_mode;

typedef struct step_ctx {
    sl_trainer *t;
    const sl_tensor *images, *labels;
    step_mode mode;
    float loss[SL_TRAINER_MAX_REPLICAS];
    int have_loss[SL_TRAINER_MAX_REPLICAS];
    sl_status st[SL_TRAINER_MAX_REPLICAS];
    sl_err errs[SL_TRAINER_MAX_REPLICAS];
} step_ctx;

/* A GPU replica's step: everything queued on the model's stream -- without an all-reduce (one
 * GPU) the whole step (forward, backward, update, the loss into its pinned slot) is one CUDA
 * graph; with one, forward/backward (a graph), the all-reduce and the update are queued in turn --
 * then the loss is posted, and the losses are taken down to the mode's count: all of them, or
 * all but this step's (waiting for the step before it alone). */
static sl_status replica_step_cuda(sl_trainer *t, int k, step_ctx *c, sl_err *err) {
    sl_mlp *m = t->models[k];
    if (c->mode != STEP_WAIT) {
        if (t->comms[k] && sl_comm_size(t->comms[k]) > 1) {
            /* two buckets: the upper layers' gradients (and the loss) are averaged while the
             * first layer's are computed, then the first layer's */
            SL_TRY(sl__mlp_loss_grad_async(m, &c->images[k], &c->labels[k], err));
            int64_t split;
            void *early;
            SL_TRY(sl__mlp_early_grads(m, &split, &early, err));
            if (early)
                SL_TRY(sl_comm_allreduce(t->comms[k], m->grads + split, m->nparams + 1 - split,
                                         SL_DTYPE_F32, SL_REDUCE_AVG, early, err));
            SL_TRY(sl_comm_allreduce(t->comms[k], m->grads, early ? split : m->nparams + 1,
                                     SL_DTYPE_F32, SL_REDUCE_AVG, sl__mlp_stream(m), err));
            SL_TRY(sl__mlp_optim_step_async(m, t->optims[k], err));
        } else {
            SL_TRY(sl__mlp_train_step_async(m, t->optims[k], &c->images[k], &c->labels[k], err));
        }
        SL_TRY(sl__mlp_post_loss(m, err));
    }
    while (sl__mlp_losses_pending(m) > (c->mode == STEP_QUEUE ? 1 : 0)) {
        SL_TRY(sl__mlp_take_loss(m, &c->loss[k], err));
        c->have_loss[k] = 1;
    }
    return SL_OK;
}

/* Replica k's part of one step; runs on its own thread (or the caller's, for one replica). CPU
 * replicas run the whole step here (STEP_WAIT has nothing left to do for them). */
static sl_status replica_step(void *vctx, int64_t i, int worker, sl_err *unused) {
    step_ctx *c = vctx;
    sl_trainer *t = c->t;
    const int k = (int)i;
    sl_err *err = &c->errs[k];
    sl_mlp *m = t->models[k];
    if (t->cuda) {
        sl_status st = replica_step_cuda(t, k, c, err);
        if (st != SL_OK) {
            sl_err_prefix(err, "replica %d: ", k);
            sl_comm_abort(t->comms[k]);
        }
        c->st[k] = st;
        return SL_OK;
    }
    if (c->mode == STEP_WAIT) return SL_OK;
    float loss = 0;
    sl_status st = sl_mlp_loss_grad(m, &c->images[k], &c->labels[k], &loss, err);
    if (st == SL_OK)
        st = sl_comm_allreduce(t->comms[k], m->grads, m->nparams, SL_DTYPE_F32, SL_REDUCE_AVG, NULL,
                               err);
    if (st == SL_OK) st = sl_optim_step(t->optims[k], m, err);
    double l = loss;
    if (st == SL_OK)
        st = sl_comm_allreduce(t->comms[k], &l, 1, SL_DTYPE_F64, SL_REDUCE_AVG, NULL, err);
    if (st != SL_OK) {
        sl_err_prefix(err, "replica %d: ", k);
        sl_comm_abort(t->comms[k]);
    }
    c->loss[k] = (float)l;
    c->have_loss[k] = 1;
    c->st[k] = st;
    return SL_OK; /* statuses are collected per replica, see run_replicas */
}

static sl_status check_shard(const sl_trainer *t, int k, const sl_tensor *x, const sl_tensor *y,
                             sl_err *err) {
    const sl_mlp_config *mc = sl_mlp_config_of(t->models[k]);
    const int in = mc->sizes[0], C = mc->sizes[mc->nsizes - 1];
    char a[96], b[96];
    if (!x->data || !y->data || x->dtype != SL_DTYPE_F32 || y->dtype != SL_DTYPE_F32 ||
        x->ndim != 2 || y->ndim != 2 || x->shape[1] != in || y->shape[1] != C ||
        x->shape[0] != y->shape[0] || x->shape[0] < 1)
        return sl_err_set(err, SL_EINVAL,
                          "trainer: shard %d: images %s and labels %s, want float32[B,%d] and "
                          "float32[B,%d] with the same B >= 1",
                          k, sl_tensor_describe(x, a, sizeof a), sl_tensor_describe(y, b, sizeof b),
                          in, C);
    if (!sl_device_eq(x->device, t->cfg.devices[k]) || !sl_device_eq(y->device, t->cfg.devices[k]))
        return sl_err_set(
            err, SL_EINVAL, "trainer: shard %d (%s, %s) is not on replica %d's device", k,
            sl_tensor_describe(x, a, sizeof a), sl_tensor_describe(y, b, sizeof b), k);
    const sl_tensor *ts[2] = {x, y};
    for (int i = 0; i < 2; i++)
        if (ts[i]->shape[0] > 1 &&
            (ts[i]->strides[1] != 4 || ts[i]->strides[0] < ts[i]->shape[1] * 4 ||
             ts[i]->strides[0] % 4 != 0))
            return sl_err_set(err, SL_EINVAL, "trainer: shard %d: %s rows are not contiguous", k,
                              i == 0 ? "images" : "labels");
    return SL_OK;
}

/* Runs every replica's part of `mode` and collects the outcome: the loss taken on replica 0 (NAN
 * when none was), or the root cause of a failure, which breaks the trainer. */
static sl_status run_replicas(sl_trainer *t, const sl_tensor *images, const sl_tensor *labels,
                              step_mode mode, float *loss, sl_err *err) {
    step_ctx *c = sl__calloc(1, sizeof *c, err);
    if (!c) return SL_ENOMEM;
    c->t = t;
    c->images = images;
    c->labels = labels;
    c->mode = mode;
    sl_status st = SL_OK;
    if (t->K == 1)
        replica_step(c, 0, 0, NULL);
    else
        st = sl__pool_parallel_for(t->pool, t->K, replica_step, c, err);
    if (st == SL_OK) {
        /* the root cause: the lowest replica that failed other than by the group's abort */
        int first = -1;
        for (int k = 0; k < t->K && first < 0; k++)
            if (c->st[k] != SL_OK && c->st[k] != SL_ECLOSED) first = k;
        for (int k = 0; k < t->K && first < 0; k++)
            if (c->st[k] != SL_OK) first = k;
        if (first >= 0) st = sl_err_copy(err, &c->errs[first]);
        if (first >= 0) sl_err_copy(&t->broken_err, &c->errs[first]);
    }
    if (st != SL_OK) {
        t->broken = 1;
        if (t->broken_err.status == SL_OK)
            sl_err_set(&t->broken_err, st, "status %s", sl_status_name(st));
    } else if (loss) {
        *loss = c->have_loss[0] ? c->loss[0] : NAN;
    }
    free(c);
    return st;
}

/* SL_ESTATE for every call on a trainer that a failed step broke. */
static sl_status broken_error(const sl_trainer *t, sl_err *err) {
    return sl_err_set(err, SL_ESTATE, "trainer: a previous step failed (%s)", t->broken_err.msg);
}

/* Checks and queues one step (mode STEP_QUEUE or STEP_QUEUE_WAIT); *loss: the loss taken. */
static sl_status submit(sl_trainer *t, const sl_tensor *images, const sl_tensor *labels,
                        step_mode mode, float *loss, sl_err *err) {
    if (t->broken) return broken_error(t, err);
    if (!images || !labels) return sl_err_set(err, SL_EINVAL, "trainer: images/labels missing");
    for (int k = 0; k < t->K; k++) SL_TRY(check_shard(t, k, &images[k], &labels[k], err));
    return run_replicas(t, images, labels, mode, loss, err);
}

sl_status sl_trainer_step_async(sl_trainer *t, const sl_tensor *images, const sl_tensor *labels,
                                float *prev_loss, sl_err *err) {
    float loss = NAN;
    SL_TRY(submit(t, images, labels, STEP_QUEUE, &loss, err));
    if (!t->cuda) { /* done already: hold its loss back, as a GPU step's would be */
        float done = t->held_loss;
        t->held_loss = loss;
        loss = t->in_flight ? done : NAN;
    }
    t->in_flight = 1;
    if (prev_loss) *prev_loss = loss;
    return SL_OK;
}

sl_status sl_trainer_wait(sl_trainer *t, float *loss, sl_err *err) {
    if (loss) *loss = NAN;
    if (!t->in_flight) return SL_OK;
    if (t->broken) return broken_error(t, err);
    float l = t->held_loss;
    if (t->cuda) SL_TRY(run_replicas(t, NULL, NULL, STEP_WAIT, &l, err));
    t->in_flight = 0;
    if (loss) *loss = l;
    return SL_OK;
}

/* One pass over the replicas: queue the step and take every loss, this step's last. */
sl_status sl_trainer_step(sl_trainer *t, const sl_tensor *images, const sl_tensor *labels,
                          float *loss, sl_err *err) {
    float l = NAN;
    SL_TRY(submit(t, images, labels, STEP_QUEUE_WAIT, &l, err));
    t->in_flight = 0;
    if (loss) *loss = l;
    return SL_OK;
}

sl_status sl_trainer_step_global(sl_trainer *t, const sl_tensor *images, const sl_tensor *labels,
                                 float *loss, sl_err *err) {
    const int K = t->K;
    if (!images || !labels || images->ndim < 1 || labels->ndim < 1 ||
        images->shape[0] != labels->shape[0])
        return sl_err_set(err, SL_EINVAL, "trainer: global images and labels of different batch");
    const int64_t B = images->shape[0];
    if (B % K != 0 || B == 0)
        return sl_err_set(err, SL_EINVAL,
                          "trainer: global batch %lld does not split into %d equal shards",
                          (long long)B, K);
    sl_tensor *xs = sl__calloc(2 * (size_t)K, sizeof *xs, err);
    if (!xs) return SL_ENOMEM;
    sl_tensor *ys = xs + K;
    sl_status st = SL_OK;
    for (int k = 0; k < K && st == SL_OK; k++) {
        st = sl_tensor_slice(images, 0, k * (B / K), (k + 1) * (B / K), &xs[k], err);
        if (st == SL_OK)
            st = sl_tensor_slice(labels, 0, k * (B / K), (k + 1) * (B / K), &ys[k], err);
    }
    if (st == SL_OK) st = sl_trainer_step(t, xs, ys, loss, err);
    free(xs);
    return st;
}
