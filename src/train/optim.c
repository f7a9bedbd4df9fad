/* SPDX-License-Identifier: Apache-2.0 */
/* sl_optim: SGD (the seed's), SGD with momentum (Nesterov optional), Adam and AdamW over one flat
 * float32 parameter buffer and its gradient buffer. Semantics are PyTorch's single-tensor
 * implementations (torch.optim.SGD / Adam / AdamW, amsgrad off, dampening 0, maximize off):
 *   SGD       d = g + wd*p;  momentum: buf = mu*buf + d (buf starts at 0, so step 1 gives buf = d);
 *             nesterov: d = d + mu*buf, else d = buf;  p -= lr*d
 *   Adam      g' = g + wd*p;  m = b1*m + (1-b1)*g';  v = b2*v + (1-b2)*g'^2;
 *             p -= (lr / (1 - b1^t)) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
 *   AdamW     p *= 1 - lr*wd; then Adam with g' = g
 * Adam's update is also optax.adam's (eps outside the square root, eps_root 0) up to rounding. The
 * bias corrections are computed in double once per step; every element update is float32, so
 * replicas that apply the same update to the same values stay bit-identical. State lives on the
 * optimiser's device: host memory, or (CUDA builds) the device's pool, updated by
 * src/train/optim.cu's kernels, which repeat these loops operation for operation (same bits). On a
 * CUDA device sl_optim_apply runs on the legacy default stream and waits for the update;
 * sl__optim_apply_async (train/optim.h) queues it on a given stream without waiting: mlp.c's
 * sl_optim_step runs it on the model's stream and then waits. The optimiser sees buffers and a
 * stream, never the model. */
#include "sluice/train.h"

#include "core/alloc.h"
#include "core/bytes.h"
#include "core/log.h"
#include "train/optim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef SLUICE_HAVE_CUDA
#include "core/cuda.h"
static void cuda_args(const sl_optim *o, sl__cuda_optim_args *out);
#endif

struct sl_optim {
    sl_optim_config cfg;
    sl_device dev;
    int64_t n;
    int64_t steps;
    float *m;   /* SGD momentum buffer, or Adam's first moment; NULL when unused */
    float *v;   /* Adam's second moment */
    void *pool; /* CUDA: the sl__devpool the state came from */
#ifdef SLUICE_HAVE_CUDA
    sl__cuda_optim_state *cu; /* CUDA: staged scalars, their device copy */
#endif
};

void sl_optim_config_default(sl_optim_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->kind = SL_OPTIM_SGD;
    cfg->lr = 0.001f;
    cfg->beta1 = 0.9f;
    cfg->beta2 = 0.999f;
    cfg->eps = 1e-8f;
}

sl_status sl_optim_parse_kind(const char *name, sl_optim_config *cfg, sl_err *err) {
    if (!name) return sl_err_set(err, SL_EINVAL, "optimiser name missing");
    if (strcmp(name, "sgd") == 0) {
        cfg->kind = SL_OPTIM_SGD;
        cfg->momentum = 0;
    } else if (strcmp(name, "momentum") == 0) {
        cfg->kind = SL_OPTIM_SGD;
        cfg->momentum = 0.9f;
    } else if (strcmp(name, "adam") == 0) {
        cfg->kind = SL_OPTIM_ADAM;
    } else if (strcmp(name, "adamw") == 0) {
        cfg->kind = SL_OPTIM_ADAMW;
    } else {
        return sl_err_set(err, SL_EINVAL, "unknown optimiser \"%s\" (sgd, momentum, adam or adamw)",
                          name);
    }
    return SL_OK;
}

static int nstate(const sl_optim_config *c) {
    if (c->kind == SL_OPTIM_SGD) return c->momentum != 0 ? 1 : 0;
    return 2;
}

static sl_status check_config(const sl_optim_config *c, sl_err *err) {
    if (c->kind != SL_OPTIM_SGD && c->kind != SL_OPTIM_ADAM && c->kind != SL_OPTIM_ADAMW)
        return sl_err_set(err, SL_EINVAL, "optimiser: unknown kind %d", (int)c->kind);
    if (!(c->lr >= 0 && isfinite(c->lr)))
        return sl_err_set(err, SL_EINVAL, "optimiser: learning rate %g", (double)c->lr);
    if (!(c->weight_decay >= 0 && isfinite(c->weight_decay)))
        return sl_err_set(err, SL_EINVAL, "optimiser: weight decay %g", (double)c->weight_decay);
    if (c->kind == SL_OPTIM_SGD) {
        if (!(c->momentum >= 0 && c->momentum < 1))
            return sl_err_set(err, SL_EINVAL, "optimiser: momentum %g not in [0, 1)",
                              (double)c->momentum);
        if (c->nesterov && c->momentum == 0)
            return sl_err_set(err, SL_EINVAL, "optimiser: Nesterov needs a momentum > 0");
    } else {
        if (!(c->beta1 >= 0 && c->beta1 < 1) || !(c->beta2 >= 0 && c->beta2 < 1))
            return sl_err_set(err, SL_EINVAL, "optimiser: Adam betas (%g, %g) not in [0, 1)",
                              (double)c->beta1, (double)c->beta2);
        if (!(c->eps >= 0 && isfinite(c->eps)))
            return sl_err_set(err, SL_EINVAL, "optimiser: Adam eps %g", (double)c->eps);
    }
    return SL_OK;
}

sl_status sl_optim_create(const sl_optim_config *cfg, int64_t n, sl_device dev, sl_optim **out,
                          sl_err *err) {
    SL_ASSERT(out != NULL);
    *out = NULL;
    sl_optim_config c;
    if (cfg)
        c = *cfg;
    else
        sl_optim_config_default(&c);
    SL_TRY(check_config(&c, err));
    if (n < 0) return sl_err_set(err, SL_EINVAL, "optimiser: %lld parameters", (long long)n);
#ifndef SLUICE_HAVE_CUDA
    if (dev.kind != SL_DEVICE_CPU)
        return sl_err_set(err, SL_ENOTSUP, "optimiser: no backend for device cuda:%d in this build",
                          dev.id);
#endif
    sl_optim *o = sl__calloc(1, sizeof *o, err);
    if (!o) return SL_ENOMEM;
    o->cfg = c;
    o->dev = dev;
    o->n = n;
    const size_t bytes = (size_t)n * sizeof(float);
    const int k = nstate(&c);
    sl_status st = SL_OK;
    if (dev.kind == SL_DEVICE_CPU) {
        if (k >= 1 && !(o->m = sl__alloc_host(bytes, SL_ALIGN, err))) goto fail;
        if (k >= 2 && !(o->v = sl__alloc_host(bytes, SL_ALIGN, err))) goto fail;
        if (o->m) memset(o->m, 0, bytes);
        if (o->v) memset(o->v, 0, bytes);
    }
#ifdef SLUICE_HAVE_CUDA
    else {
        st = sl__cuda_set_device(dev.id, err);
        if (st == SL_OK && !(o->pool = sl__devpool_get(dev.id, err))) st = SL_ECUDA;
        const unsigned char zero[4] = {0, 0, 0, 0};
        float **state[2] = {&o->m, &o->v};
        for (int s = 0; s < k && st == SL_OK; s++) {
            *state[s] = sl__devpool_alloc(o->pool, bytes, err);
            st = *state[s] ? sl__cuda_fill(*state[s], (size_t)n, zero, 4, NULL, err) : SL_ENOMEM;
        }
        if (st == SL_OK) {
            sl__cuda_optim_args a;
            cuda_args(o, &a);
            st = sl__cuda_optim_state_create(dev.id, &a, &o->cu, err);
        }
        if (st != SL_OK) goto fail;
    }
#endif
    *out = o;
    return SL_OK;
fail:
    sl_optim_free(o);
    return st != SL_OK ? st : SL_ENOMEM;
}

void sl_optim_free(sl_optim *o) {
    if (!o) return;
    if (o->dev.kind == SL_DEVICE_CPU) {
        sl__alloc_host_free(o->m);
        sl__alloc_host_free(o->v);
    } else if (o->pool) {
#ifdef SLUICE_HAVE_CUDA
        sl__cuda_optim_state_free(o->cu); /* waits for the last queued update */
#endif
        sl__devpool_free(o->pool, o->m);
        sl__devpool_free(o->pool, o->v);
    }
    free(o);
}

int64_t sl_optim_steps(const sl_optim *o) {
    return o->steps;
}
const sl_optim_config *sl_optim_config_of(const sl_optim *o) {
    return &o->cfg;
}

/* p, g: (n,) f32 on the host */
static void step_sgd(sl_optim *o, float *p, const float *g) {
    const float lr = o->cfg.lr, wd = o->cfg.weight_decay, mu = o->cfg.momentum;
    const int64_t n = o->n;
    if (mu == 0) {
        if (wd == 0)
            for (int64_t i = 0; i < n; i++) p[i] -= lr * g[i];
        else
            for (int64_t i = 0; i < n; i++) p[i] -= lr * (g[i] + wd * p[i]);
        return;
    }
    float *buf = o->m;
    const int nesterov = o->cfg.nesterov;
    for (int64_t i = 0; i < n; i++) {
        float d = g[i] + wd * p[i];
        buf[i] = mu * buf[i] + d;
        p[i] -= lr * (nesterov ? d + mu * buf[i] : buf[i]);
    }
}

static void step_adam(sl_optim *o, float *p, const float *g) {
    const int64_t n = o->n;
    const float b1 = o->cfg.beta1, b2 = o->cfg.beta2, eps = o->cfg.eps, lr = o->cfg.lr;
    const float wd = o->cfg.weight_decay;
    const double t = (double)o->steps; /* already counts this step */
    const float step_size = (float)((double)lr / (1.0 - pow((double)b1, t)));
    const float bc2_sqrt = (float)sqrt(1.0 - pow((double)b2, t));
    const int decoupled = o->cfg.kind == SL_OPTIM_ADAMW;
    const float decay = 1.0f - lr * wd;
    float *m = o->m, *v = o->v;
    for (int64_t i = 0; i < n; i++) {
        float gi = g[i];
        if (decoupled)
            p[i] *= decay;
        else
            gi += wd * p[i];
        m[i] = b1 * m[i] + (1.0f - b1) * gi;
        v[i] = b2 * v[i] + (1.0f - b2) * gi * gi;
        const float denom = sqrtf(v[i]) / bc2_sqrt + eps;
        p[i] -= step_size * (m[i] / denom);
    }
}

#ifdef SLUICE_HAVE_CUDA
/* The per-step scalars exactly as step_sgd / step_adam compute them (o->steps counts this step). */
static void cuda_args(const sl_optim *o, sl__cuda_optim_args *out) {
    sl__cuda_optim_args a;
    memset(&a, 0, sizeof a);
    a.kind = (int)o->cfg.kind;
    a.nesterov = o->cfg.nesterov;
    a.lr = o->cfg.lr;
    a.wd = o->cfg.weight_decay;
    a.mu = o->cfg.momentum;
    a.b1 = o->cfg.beta1;
    a.b2 = o->cfg.beta2;
    a.one_minus_b1 = 1.0f - a.b1;
    a.one_minus_b2 = 1.0f - a.b2;
    a.eps = o->cfg.eps;
    if (o->cfg.kind != SL_OPTIM_SGD) {
        const double t = (double)o->steps;
        a.step_size = (float)((double)a.lr / (1.0 - pow((double)a.b1, t)));
        a.bc2_sqrt = (float)sqrt(1.0 - pow((double)a.b2, t));
        a.decay = 1.0f - a.lr * a.wd;
    }
    *out = a;
}

/* The update on the GPU, queued on stream (NULL: the legacy default stream). */
static sl_status stage_cuda(sl_optim *o, sl_err *err) {
    sl__cuda_optim_args a;
    cuda_args(o, &a);
    SL_TRY(sl__cuda_set_device(o->dev.id, err));
    return sl__cuda_optim_stage(o->cu, &a, err);
}

static sl_status step_cuda(sl_optim *o, float *p, const float *g, void *stream, sl_err *err) {
    SL_TRY(stage_cuda(o, err));
    sl_status st = sl__cuda_optim_enqueue(o->cu, p, g, o->m, o->v, o->n, stream, err);
    if (st == SL_OK) st = sl__cuda_optim_mark(o->cu, stream, err);
    return st;
}

sl_status sl__optim_cuda_prepare(sl_optim *o, sl_err *err) {
    SL_ASSERT(o->dev.kind == SL_DEVICE_CUDA && o->cu);
    o->steps++;
    sl_status st = stage_cuda(o, err);
    if (st != SL_OK) o->steps--;
    return st;
}

void sl__optim_cuda_cancel(sl_optim *o) {
    o->steps--;
}

sl_status sl__optim_cuda_copy_args(sl_optim *o, void *stream, sl_err *err) {
    return sl__cuda_optim_copy_args(o->cu, stream, err);
}

sl_status sl__optim_cuda_update(sl_optim *o, float *p, const float *g, int64_t off, int64_t n,
                                void *stream, sl_err *err) {
    SL_ASSERT(off >= 0 && n >= 0 && off + n <= o->n);
    return sl__cuda_optim_update(o->cu, p + off, g + off, o->m ? o->m + off : NULL,
                                 o->v ? o->v + off : NULL, n, stream, err);
}

sl_status sl__optim_cuda_mark(sl_optim *o, void *stream, sl_err *err) {
    return sl__cuda_optim_mark(o->cu, stream, err);
}
#endif

/* Checks the buffers and runs one update, on `stream` for a CUDA optimiser (without waiting). */
sl_status sl__optim_apply_async(sl_optim *o, sl_tensor *params, const sl_tensor *grads,
                                void *stream, sl_err *err) {
    char a[96], b[96];
    if (!params || !grads || params->dtype != SL_DTYPE_F32 || grads->dtype != SL_DTYPE_F32 ||
        sl_tensor_numel(params) != o->n || sl_tensor_numel(grads) != o->n ||
        !sl_tensor_is_contiguous(params) || !sl_tensor_is_contiguous(grads))
        return sl_err_set(
            err, SL_EINVAL, "optimiser: params %s and grads %s must be contiguous float32[%lld]",
            params ? sl_tensor_describe(params, a, sizeof a) : "missing",
            grads ? sl_tensor_describe(grads, b, sizeof b) : "missing", (long long)o->n);
    if (!sl_device_eq(params->device, o->dev) || !sl_device_eq(grads->device, o->dev))
        return sl_err_set(err, SL_EINVAL, "optimiser: params %s / grads %s not on its device",
                          sl_tensor_describe(params, a, sizeof a),
                          sl_tensor_describe(grads, b, sizeof b));
    o->steps++;
#ifdef SLUICE_HAVE_CUDA
    if (o->dev.kind == SL_DEVICE_CUDA) {
        sl_status st = step_cuda(o, params->data, grads->data, stream, err);
        if (st != SL_OK) o->steps--;
        return st;
    }
#endif
    if (o->cfg.kind == SL_OPTIM_SGD)
        step_sgd(o, params->data, grads->data);
    else
        step_adam(o, params->data, grads->data);
    return SL_OK;
}

sl_status sl_optim_apply(sl_optim *o, sl_tensor *params, const sl_tensor *grads, sl_err *err) {
    SL_TRY(sl__optim_apply_async(o, params, grads, NULL, err));
#ifdef SLUICE_HAVE_CUDA
    if (o->dev.kind == SL_DEVICE_CUDA) return sl__cuda_stream_sync(NULL, err);
#endif
    return SL_OK;
}

/* ---- state for checkpoints --------------------------------------------------------------------
 */
/* magic(8) version u32, kind u32, nstate u32, reserved u32, n u64, steps u64,
 * nstate*n f32, crc32 u32 -- little-endian */

static const unsigned char OPT_MAGIC[8] = {'S', 'L', 'O', 'P', 'T', '\r', '\n', 0x1a};
#define OPT_HDR 40

/* Copies n state floats between the optimiser's device and the host (to_dev: host -> device). */
static sl_status state_copy(const sl_optim *o, float *dst, const float *src, int to_dev,
                            sl_err *err) {
#ifdef SLUICE_HAVE_CUDA
    SL_TRY(sl__cuda_set_device(o->dev.id, err));
    return sl__cuda_memcpy(dst, to_dev, src, !to_dev, (size_t)o->n * sizeof(float), NULL, err);
#else
    (void)o, (void)dst, (void)src, (void)to_dev;
    return sl_err_set(err, SL_ENOTSUP, "optimiser: device state in a build without CUDA");
#endif
}

sl_status sl_optim_serialize(const sl_optim *o, void *buf, size_t cap, size_t *size, sl_err *err) {
    SL_ASSERT(size != NULL);
    const int k = nstate(&o->cfg);
    const size_t need = OPT_HDR + 4 * (size_t)k * (size_t)o->n + 4;
    *size = need;
    if (!buf) return SL_OK;
    if (cap < need)
        return sl_err_set(err, SL_EINVAL, "optimiser serialize: buffer of %zu bytes, need %zu", cap,
                          need);
    unsigned char *p = buf;
    memcpy(p, OPT_MAGIC, 8);
    sl__put_u32(p + 8, 1);
    sl__put_u32(p + 12, (uint32_t)o->cfg.kind);
    sl__put_u32(p + 16, (uint32_t)k);
    sl__put_u32(p + 20, 0);
    sl__put_u64(p + 24, (uint64_t)o->n);
    sl__put_u64(p + 32, (uint64_t)o->steps);
    unsigned char *q = p + OPT_HDR;
    float *host = NULL;
    if (o->dev.kind != SL_DEVICE_CPU && k > 0 &&
        !(host = sl__alloc_host((size_t)o->n * sizeof(float), SL_ALIGN, err)))
        return SL_ENOMEM;
    for (int s = 0; s < k; s++) {
        const float *src = s == 0 ? o->m : o->v;
        if (host) {
            sl_status st = state_copy(o, host, src, 0, err);
            if (st != SL_OK) {
                sl__alloc_host_free(host);
                return st;
            }
            src = host;
        }
        for (int64_t i = 0; i < o->n; i++, q += 4) {
            uint32_t bits;
            memcpy(&bits, &src[i], 4);
            sl__put_u32(q, bits);
        }
    }
    sl__alloc_host_free(host);
    sl__put_u32(p + need - 4, sl__crc32(p, need - 4));
    return SL_OK;
}

sl_status sl_optim_deserialize(sl_optim *o, const void *buf, size_t size, sl_err *err) {
    const unsigned char *p = buf;
    if (!p || size < OPT_HDR + 4 || memcmp(p, OPT_MAGIC, 8) != 0)
        return sl_err_set(err, SL_EFORMAT, "not an sluice optimiser state (%s)",
                          size < OPT_HDR + 4 ? "truncated" : "bad magic");
    if (sl__get_u32(p + 8) != 1)
        return sl_err_set(err, SL_EFORMAT, "optimiser state version %u, this build reads 1",
                          sl__get_u32(p + 8));
    const uint32_t kind = sl__get_u32(p + 12), k = sl__get_u32(p + 16);
    const uint64_t n = sl__get_u64(p + 24), steps = sl__get_u64(p + 32);
    if (kind != (uint32_t)o->cfg.kind || k != (uint32_t)nstate(&o->cfg) || n != (uint64_t)o->n)
        return sl_err_set(err, SL_EINVAL,
                          "optimiser state is for kind %u with %u x %llu floats; this optimiser "
                          "is kind %d with %d x %lld",
                          kind, k, (unsigned long long)n, (int)o->cfg.kind, nstate(&o->cfg),
                          (long long)o->n);
    /* steps sets Adam's bias correction (and counts on): a value past int64 would go negative */
    if (steps > ((uint64_t)1 << 53))
        return sl_err_set(err, SL_EFORMAT, "optimiser state: field steps: %llu out of range",
                          (unsigned long long)steps);
    const size_t need = OPT_HDR + 4 * (size_t)k * (size_t)n + 4;
    if (size != need)
        return sl_err_set(err, SL_EFORMAT, "optimiser state is %zu bytes, expected %zu%s", size,
                          need, size < need ? " (truncated)" : "");
    if (sl__crc32(p, need - 4) != sl__get_u32(p + need - 4))
        return sl_err_set(err, SL_ECHECKSUM, "optimiser state checksum mismatch");
    const unsigned char *q = p + OPT_HDR;
    float *host = NULL;
    if (o->dev.kind != SL_DEVICE_CPU && k > 0 &&
        !(host = sl__alloc_host((size_t)n * sizeof(float), SL_ALIGN, err)))
        return SL_ENOMEM;
    for (uint32_t s = 0; s < k; s++) {
        float *dst = s == 0 ? o->m : o->v;
        float *w = host ? host : dst;
        for (uint64_t i = 0; i < n; i++, q += 4) {
            uint32_t bits = sl__get_u32(q);
            memcpy(&w[i], &bits, 4);
        }
        if (host) {
            sl_status st = state_copy(o, dst, host, 1, err);
            if (st != SL_OK) {
                sl__alloc_host_free(host);
                return st;
            }
        }
    }
    sl__alloc_host_free(host);
    o->steps = (int64_t)steps;
    return SL_OK;
}
