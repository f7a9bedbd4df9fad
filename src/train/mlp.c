/* SPDX-License-Identifier: Apache-2.0 */
/* sl_mlp, the device-independent part: config checks, the seed's initialisation (numpy
 * RandomState(seed): per layer w = scale*randn(in, out) then b = scale*randn(out), drawn in double
 * and stored as float32), the flat parameter layout, argument checks for every call, evaluation
 * (argmax against integer or one-hot labels) and the parameter file format (documented in train.h:
 * magic, version, activation, sizes, count, float32 data, CRC-32). The arithmetic is the backend's
 * (mlp_cpu.c, mlp.cu), chosen by the model's device. The optimiser's update of a model
 * (sl_optim_step, and the trainer's without waiting) is here too: optim.c is given the model's
 * buffers and stream (train/optim.h), never the model. */
#include "train/mlp.h"

#include "core/alloc.h"
#include "core/file.h"
#include "core/bytes.h"
#include "core/log.h"
#include "core/rng.h"
#include "train/optim.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void sl_mlp_config_default(sl_mlp_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->nsizes = 4;
    cfg->sizes[0] = 784;
    cfg->sizes[1] = 1024;
    cfg->sizes[2] = 1024;
    cfg->sizes[3] = 10;
    cfg->activation = SL_ACT_TANH;
    cfg->seed = 0;
    cfg->init_scale = 0.1;
    cfg->math = SL_MATH_FP32;
    cfg->cuda_graph = 1;
}

sl_status sl_math_parse(const char *name, sl_math *out, sl_err *err) {
    static const char *const names[] = {"fp32", "tf32", "bf16"};
    for (int i = 0; i < 3; i++)
        if (name && strcmp(name, names[i]) == 0) {
            *out = (sl_math)i;
            return SL_OK;
        }
    return sl_err_set(err, SL_EINVAL, "unknown math mode \"%s\" (fp32, tf32 or bf16)",
                      name ? name : "(null)");
}

const char *sl_math_name(sl_math m) {
    switch (m) {
    case SL_MATH_FP32:
        return "fp32";
    case SL_MATH_TF32:
        return "tf32";
    case SL_MATH_BF16:
        return "bf16";
    }
    return "unknown";
}

static const sl__mlp_backend *backend_for(sl_device dev) {
    switch (dev.kind) {
    case SL_DEVICE_CPU:
        return &sl__mlp_cpu_backend;
    case SL_DEVICE_CUDA:
#ifdef SLUICE_HAVE_CUDA
        return &sl__mlp_cuda_backend;
#else
        return NULL;
#endif
    }
    return NULL;
}

/* Checks cfg and fills in defaults (nsizes 0 -> the seed's sizes, init_scale 0 -> 0.1). */
static sl_status check_config(const sl_mlp_config *in, sl_mlp_config *out, sl_err *err) {
    if (!in) {
        sl_mlp_config_default(out);
        return SL_OK;
    }
    *out = *in;
    if (out->nsizes == 0) {
        sl_mlp_config d;
        sl_mlp_config_default(&d);
        out->nsizes = d.nsizes;
        memcpy(out->sizes, d.sizes, sizeof d.sizes);
    }
    if (out->init_scale == 0) out->init_scale = 0.1;
    if (out->nsizes < 2 || out->nsizes > SL_MLP_MAX_SIZES)
        return sl_err_set(err, SL_EINVAL, "MLP config: %d layer sizes, need 2..%d", out->nsizes,
                          SL_MLP_MAX_SIZES);
    int64_t total = 0;
    for (int i = 0; i < out->nsizes; i++) {
        if (out->sizes[i] < 1 || out->sizes[i] > (1 << 20))
            return sl_err_set(err, SL_EINVAL, "MLP config: size %d of layer %d not in 1..%d",
                              out->sizes[i], i, 1 << 20);
        if (i > 0) total += (int64_t)out->sizes[i - 1] * out->sizes[i] + out->sizes[i];
    }
    if (total > ((int64_t)1 << 31))
        return sl_err_set(err, SL_EINVAL, "MLP config: %lld parameters, at most 2^31",
                          (long long)total);
    for (int i = out->nsizes; i < SL_MLP_MAX_SIZES; i++) out->sizes[i] = 0;
    if (out->activation != SL_ACT_TANH && out->activation != SL_ACT_RELU)
        return sl_err_set(err, SL_EINVAL, "MLP config: unknown activation %d",
                          (int)out->activation);
    if (out->math != SL_MATH_FP32 && out->math != SL_MATH_TF32 && out->math != SL_MATH_BF16)
        return sl_err_set(err, SL_EINVAL, "MLP config: unknown math mode %d", (int)out->math);
    if (!(out->init_scale > 0 && out->init_scale < 1e6))
        return sl_err_set(err, SL_EINVAL, "MLP config: init_scale %g not positive",
                          out->init_scale);
    return SL_OK;
}

/* The seed's initial parameters in the flat layout. out: (nparams,) f32 on the host */
static void init_params(const sl_mlp *m, float *out) {
    sl__rng_mt r;
    sl__rng_mt_seed(&r, m->cfg.seed);
    const double scale = m->cfg.init_scale;
    for (int64_t i = 0; i < m->nparams; i++) out[i] = (float)(scale * sl__rng_mt_randn(&r));
}

sl_status sl_mlp_create(const sl_mlp_config *cfg, sl_device dev, sl_mlp **out, sl_err *err) {
    SL_ASSERT(out != NULL);
    *out = NULL;
    sl_mlp_config c;
    SL_TRY(check_config(cfg, &c, err));
    const sl__mlp_backend *be = backend_for(dev);
    if (!be)
        return sl_err_set(err, SL_ENOTSUP, "MLP: no backend for device %s:%d in this build",
                          dev.kind == SL_DEVICE_CUDA ? "cuda" : "cpu", dev.id);
    sl_mlp *m = sl__calloc(1, sizeof *m, err);
    if (!m) return SL_ENOMEM;
    m->cfg = c;
    m->dev = dev;
    m->be = be;
    m->nlayers = c.nsizes - 1;
    int64_t off = 0;
    for (int l = 0; l < m->nlayers; l++) {
        m->w_off[l] = off;
        off += (int64_t)c.sizes[l] * c.sizes[l + 1];
        m->b_off[l] = off;
        off += c.sizes[l + 1];
    }
    m->nparams = off;
    sl_status st = be->init(m, err);
    float *host = NULL;
    if (st == SL_OK) {
        /* The draw order (w0, b0, w1, b1, ...) is the flat layout, so one pass fills it. */
        host = sl__alloc_host((size_t)m->nparams * sizeof(float), SL_ALIGN, err);
        st = host ? SL_OK : SL_ENOMEM;
    }
    if (st == SL_OK) {
        init_params(m, host);
        st = be->upload(m, m->params, host, m->nparams, err);
    }
    sl__alloc_host_free(host);
    if (st != SL_OK) {
        sl_mlp_free(m);
        sl_err_prefix(err, "creating the MLP: ");
        return st;
    }
    *out = m;
    return SL_OK;
}

void sl_mlp_free(sl_mlp *m) {
    if (!m) return;
    m->be->release(m);
    free(m->host_lp);
    free(m);
}

const sl_mlp_config *sl_mlp_config_of(const sl_mlp *m) {
    return &m->cfg;
}
sl_device sl_mlp_device(const sl_mlp *m) {
    return m->dev;
}
int64_t sl_mlp_num_params(const sl_mlp *m) {
    return m->nparams;
}

sl_status sl_mlp_param_range(const sl_mlp *m, int layer, int which, int64_t *offset, int64_t *count,
                             sl_err *err) {
    if (layer < 0 || layer >= m->nlayers || (which != 0 && which != 1))
        return sl_err_set(err, SL_EINVAL, "MLP: no parameter (layer %d, %s) in a %d-layer model",
                          layer,
                          which == 0   ? "w"
                          : which == 1 ? "b"
                                       : "?",
                          m->nlayers);
    const int n = m->cfg.sizes[layer], o = m->cfg.sizes[layer + 1];
    if (offset) *offset = which == 0 ? m->w_off[layer] : m->b_off[layer];
    if (count) *count = which == 0 ? (int64_t)n * o : o;
    return SL_OK;
}

static void flat_view(const sl_mlp *m, float *data, sl_tensor *out) {
    int64_t shape[1] = {m->nparams};
    sl_status st = sl_tensor_wrap(out, data, SL_DTYPE_F32, m->dev, 1, shape, NULL);
    SL_ASSERT(st == SL_OK);
}

void sl_mlp_params(sl_mlp *m, sl_tensor *out) {
    flat_view(m, m->params, out);
}
void sl_mlp_grads(sl_mlp *m, sl_tensor *out) {
    flat_view(m, m->grads, out);
}

static sl_status check_n(const sl_mlp *m, int64_t n, const void *host, const char *what,
                         sl_err *err) {
    if (n != m->nparams || !host)
        return sl_err_set(err, SL_EINVAL, "MLP %s: %lld floats given, the model has %lld", what,
                          (long long)n, (long long)m->nparams);
    return SL_OK;
}

sl_status sl_mlp_get_params(const sl_mlp *m, float *host, int64_t n, sl_err *err) {
    SL_TRY(check_n(m, n, host, "get_params", err));
    return m->be->download(m, host, m->params, n, err);
}

sl_status sl_mlp_set_params(sl_mlp *m, const float *host, int64_t n, sl_err *err) {
    SL_TRY(check_n(m, n, host, "set_params", err));
    return m->be->upload(m, m->params, host, n, err);
}

sl_status sl_mlp_get_grads(const sl_mlp *m, float *host, int64_t n, sl_err *err) {
    SL_TRY(check_n(m, n, host, "get_grads", err));
    return m->be->download(m, host, m->grads, n, err);
}

sl_status sl_mlp_set_grads(sl_mlp *m, const float *host, int64_t n, sl_err *err) {
    SL_TRY(check_n(m, n, host, "set_grads", err));
    return m->be->upload(m, m->grads, host, n, err);
}

static int same_sizes(const sl_mlp_config *a, const sl_mlp_config *b) {
    if (a->nsizes != b->nsizes) return 0;
    for (int i = 0; i < a->nsizes; i++)
        if (a->sizes[i] != b->sizes[i]) return 0;
    return 1;
}

static void sizes_str(const sl_mlp_config *c, char *buf, size_t cap) {
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < c->nsizes && used < cap; i++) {
        int k = snprintf(buf + used, cap - used, "%s%d", i ? "-" : "", c->sizes[i]);
        if (k < 0) break;
        used += (size_t)k;
    }
}

static sl_status sizes_mismatch(const sl_mlp_config *want, const sl_mlp_config *got,
                                const char *what, sl_err *err) {
    char a[160], b[160];
    sizes_str(want, a, sizeof a);
    sizes_str(got, b, sizeof b);
    return sl_err_set(err, SL_EINVAL, "%s: model is %s, the other is %s", what, a, b);
}

sl_status sl_mlp_copy_params(sl_mlp *dst, const sl_mlp *src, sl_err *err) {
    if (!same_sizes(&dst->cfg, &src->cfg)) return sizes_mismatch(&dst->cfg, &src->cfg, "copy", err);
    if (dst == src) return SL_OK;
    if (src->be->sync) SL_TRY(src->be->sync(src, err));
    if (dst->be->sync) SL_TRY(dst->be->sync(dst, err));
    sl_tensor d, s;
    flat_view(dst, dst->params, &d);
    flat_view(src, src->params, &s);
    return sl_tensor_copy(&d, &s, NULL, err);
}

/* ---- argument checks --------------------------------------------------------------------------
 */

/* t must be (B, cols) f32 on the model's device, inner dimension contiguous. */
static sl_status check_matrix(const sl_mlp *m, const sl_tensor *t, const char *name, int64_t cols,
                              int64_t rows, sl_err *err) {
    char d[96];
    if (!t || !t->data) return sl_err_set(err, SL_EINVAL, "MLP: %s is missing", name);
    if (t->dtype != SL_DTYPE_F32 || t->ndim != 2 || t->shape[1] != cols ||
        (rows >= 0 && t->shape[0] != rows))
        return sl_err_set(err, SL_EINVAL, "MLP: %s is %s, want float32[%s,%lld]", name,
                          sl_tensor_describe(t, d, sizeof d), rows >= 0 ? "B" : "B",
                          (long long)cols);
    if (t->shape[0] < 1 || t->shape[0] > INT32_MAX)
        return sl_err_set(err, SL_EINVAL, "MLP: %s has %lld rows, need 1..2^31-1", name,
                          (long long)t->shape[0]);
    if (!sl_device_eq(t->device, m->dev))
        return sl_err_set(err, SL_EINVAL, "MLP: %s is %s, not on the model's device", name,
                          sl_tensor_describe(t, d, sizeof d));
    if (t->strides[1] != (int64_t)sizeof(float) ||
        (t->shape[0] > 1 && (t->strides[0] < cols * (int64_t)sizeof(float) ||
                             t->strides[0] % (int64_t)sizeof(float) != 0 ||
                             t->strides[0] / (int64_t)sizeof(float) > INT32_MAX)))
        return sl_err_set(err, SL_EINVAL,
                          "MLP: %s has strides (%lld, %lld) bytes; rows must be contiguous float "
                          "rows",
                          name, (long long)t->strides[0], (long long)t->strides[1]);
    return SL_OK;
}

/* A one-row tensor may carry any row stride; backends read strides[0] as the row pitch. */
static void fix_stride(const sl_tensor *t, sl_tensor *out) {
    *out = *t;
    if (out->shape[0] == 1) out->strides[0] = out->shape[1] * (int64_t)sizeof(float);
}

static sl_status check_xy(const sl_mlp *m, const sl_tensor *x, const sl_tensor *y, sl_tensor *xo,
                          sl_tensor *yo, sl_err *err) {
    SL_TRY(check_matrix(m, x, "images", m->cfg.sizes[0], -1, err));
    fix_stride(x, xo);
    if (y) {
        SL_TRY(check_matrix(m, y, "labels", m->cfg.sizes[m->nlayers], x->shape[0], err));
        fix_stride(y, yo);
    }
    return SL_OK;
}

/* ---- compute ----------------------------------------------------------------------------------
 */

sl_status sl_mlp_loss_grad(sl_mlp *m, const sl_tensor *images, const sl_tensor *labels, float *loss,
                           sl_err *err) {
    sl_tensor x, y;
    SL_TRY(check_xy(m, images, labels, &x, &y, err));
    if (m->be->loss_grad_async) {
        SL_TRY(m->be->loss_grad_async(m, &x, &y, err));
        if (!loss) return m->be->sync(m, err);
        return sl__mlp_read_loss(m, loss, err);
    }
    SL_TRY(m->be->forward(m, &x, err));
    if (loss) {
        double s;
        SL_TRY(m->be->loss_sum(m, &y, &s, err));
        *loss = (float)(s / (double)x.shape[0]);
    }
    return m->be->backward(m, &x, &y, err);
}

sl_status sl__mlp_read_loss(sl_mlp *m, float *loss, sl_err *err) {
    if (m->be->read_loss) return m->be->read_loss(m, loss, err);
    return m->be->download(m, loss, m->grads + m->nparams, 1, err);
}

sl_status sl__mlp_post_loss(sl_mlp *m, sl_err *err) {
    SL_ASSERT(m->be->post_loss);
    return m->be->post_loss(m, err);
}

sl_status sl__mlp_take_loss(sl_mlp *m, float *loss, sl_err *err) {
    SL_ASSERT(m->be->take_loss);
    return m->be->take_loss(m, loss, err);
}

int sl__mlp_losses_pending(const sl_mlp *m) {
    return m->be->losses_pending ? m->be->losses_pending(m) : 0;
}

sl_status sl__mlp_early_grads(sl_mlp *m, int64_t *split, void **stream, sl_err *err) {
    *split = 0;
    *stream = NULL;
    return m->be->early_grads ? m->be->early_grads(m, split, stream, err) : SL_OK;
}

sl_status sl__mlp_train_step_async(sl_mlp *m, sl_optim *o, const sl_tensor *images,
                                   const sl_tensor *labels, sl_err *err) {
    if (!m->be->train_step_async) {
        SL_TRY(sl__mlp_loss_grad_async(m, images, labels, err));
        return sl__mlp_optim_step_async(m, o, err);
    }
    sl_tensor x, y;
    SL_TRY(check_xy(m, images, labels, &x, &y, err));
    return m->be->train_step_async(m, o, &x, &y, err);
}

sl_status sl__mlp_optim_step_async(sl_mlp *m, sl_optim *o, sl_err *err) {
    sl_tensor p, g;
    sl_mlp_params(m, &p);
    sl_mlp_grads(m, &g);
    return sl__optim_apply_async(o, &p, &g, sl__mlp_stream(m), err);
}

/* sl_optim's step of a model: the update on the model's stream, then the wait for it */
sl_status sl_optim_step(sl_optim *o, sl_mlp *m, sl_err *err) {
    SL_TRY(sl__mlp_optim_step_async(m, o, err));
    if (m->be->sync) return m->be->sync(m, err);
    return SL_OK;
}

sl_status sl__mlp_loss_grad_async(sl_mlp *m, const sl_tensor *images, const sl_tensor *labels,
                                  sl_err *err) {
    if (!m->be->loss_grad_async) return sl_mlp_loss_grad(m, images, labels, NULL, err);
    sl_tensor x, y;
    SL_TRY(check_xy(m, images, labels, &x, &y, err));
    return m->be->loss_grad_async(m, &x, &y, err);
}

sl_status sl_mlp_loss(sl_mlp *m, const sl_tensor *images, const sl_tensor *labels, float *loss,
                      sl_err *err) {
    sl_tensor x, y;
    SL_ASSERT(loss != NULL);
    SL_TRY(check_xy(m, images, labels, &x, &y, err));
    SL_TRY(m->be->forward(m, &x, err));
    double s;
    SL_TRY(m->be->loss_sum(m, &y, &s, err));
    *loss = (float)(s / (double)x.shape[0]);
    return SL_OK;
}

sl_status sl_mlp_predict(sl_mlp *m, const sl_tensor *images, sl_tensor *logprobs, sl_err *err) {
    sl_tensor x;
    SL_TRY(check_xy(m, images, NULL, &x, NULL, err));
    const int C = m->cfg.sizes[m->nlayers];
    char d[96];
    if (!logprobs || logprobs->dtype != SL_DTYPE_F32 || logprobs->ndim != 2 ||
        logprobs->shape[0] != x.shape[0] || logprobs->shape[1] != C)
        return sl_err_set(err, SL_EINVAL, "MLP predict: output is %s, want float32[%lld,%d]",
                          logprobs ? sl_tensor_describe(logprobs, d, sizeof d) : "missing",
                          (long long)x.shape[0], C);
    SL_TRY(m->be->forward(m, &x, err));
    return m->be->logprobs(m, logprobs, err);
}

/* Integer label of row r of a (B,) or (B, 1) integer tensor on the host. */
static int64_t int_label(const sl_tensor *t, int64_t r) {
    const char *p = (const char *)t->data + r * t->strides[0];
    switch (t->dtype) {
    case SL_DTYPE_U8:
        return *(const uint8_t *)p;
    case SL_DTYPE_I8:
        return *(const int8_t *)p;
    case SL_DTYPE_U16:
        return *(const uint16_t *)p;
    case SL_DTYPE_I16:
        return *(const int16_t *)p;
    case SL_DTYPE_I32:
        return *(const int32_t *)p;
    case SL_DTYPE_I64:
        return *(const int64_t *)p;
    case SL_DTYPE_U32:
        return *(const uint32_t *)p;
    case SL_DTYPE_U64:
        return *(const uint64_t *)p > INT64_MAX ? -1 : (int64_t) * (const uint64_t *)p;
    default:
        return -1;
    }
}

static int64_t argmax_row(const float *row, int64_t stride_elems, int n) {
    int best = 0;
    for (int j = 1; j < n; j++)
        if (row[j * stride_elems] > row[best * stride_elems]) best = j;
    return best;
}

sl_status sl_mlp_evaluate(sl_mlp *m, const sl_tensor *images, const sl_tensor *labels,
                          int64_t *correct, double *loss_sum, sl_err *err) {
    sl_tensor x;
    char d[96];
    SL_TRY(check_xy(m, images, NULL, &x, NULL, err));
    const int64_t B = x.shape[0];
    const int C = m->cfg.sizes[m->nlayers];
    if (!labels || !labels->data)
        return sl_err_set(err, SL_EINVAL, "MLP evaluate: labels are missing");
    if (labels->device.kind != SL_DEVICE_CPU) {
        /* device labels: evaluate against a host copy (B small integers or B x C floats) */
        if (!sl_tensor_is_contiguous(labels))
            return sl_err_set(err, SL_EINVAL, "MLP evaluate: device labels %s must be contiguous",
                              sl_tensor_describe(labels, d, sizeof d));
        sl_tensor host;
        SL_TRY(sl_tensor_alloc(&host, labels->dtype, sl_cpu(), labels->ndim, labels->shape, NULL,
                               err));
        sl_status st = sl_tensor_copy(&host, labels, NULL, err);
        if (st == SL_OK) st = sl_mlp_evaluate(m, images, &host, correct, loss_sum, err);
        sl_tensor_free(&host);
        return st;
    }
    const int onehot = labels->dtype == SL_DTYPE_F32 && labels->ndim == 2 && labels->shape[1] == C;
    const int ints = !onehot && sl_dtype_is_float(labels->dtype) == 0 &&
                     labels->dtype != SL_DTYPE_BOOL &&
                     (labels->ndim == 1 || (labels->ndim == 2 && labels->shape[1] == 1));
    if ((!onehot && !ints) || labels->shape[0] != B)
        return sl_err_set(err, SL_EINVAL,
                          "MLP evaluate: labels are %s, want integer [%lld] or [%lld,1], or "
                          "float32 one-hot [%lld,%d]",
                          sl_tensor_describe(labels, d, sizeof d), (long long)B, (long long)B,
                          (long long)B, C);
    if (loss_sum && !onehot)
        return sl_err_set(err, SL_EINVAL, "MLP evaluate: a loss needs one-hot labels");
    if (m->host_lp_rows < B) {
        free(m->host_lp);
        m->host_lp_rows = 0;
        m->host_lp = sl__malloc((size_t)B * (size_t)C * sizeof(float), err);
        if (!m->host_lp) return SL_ENOMEM;
        m->host_lp_rows = B;
    }
    sl_tensor lp;
    int64_t shape[2] = {B, C};
    SL_TRY(sl_tensor_wrap(&lp, m->host_lp, SL_DTYPE_F32, sl_cpu(), 2, shape, NULL));
    SL_TRY(m->be->forward(m, &x, err));
    SL_TRY(m->be->logprobs(m, &lp, err));
    int64_t ok = 0;
    double ls = 0;
    for (int64_t r = 0; r < B; r++) {
        const float *row = m->host_lp + r * C;
        int64_t pred = argmax_row(row, 1, C), want;
        if (onehot) {
            const float *yr = (const float *)((const char *)labels->data + r * labels->strides[0]);
            const int64_t ys = labels->strides[1] / (int64_t)sizeof(float);
            want = argmax_row(yr, ys, C);
            double s = 0;
            for (int j = 0; j < C; j++) s += (double)row[j] * (double)yr[j * ys];
            ls -= s;
        } else {
            want = int_label(labels, r);
        }
        ok += pred == want;
    }
    if (correct) *correct = ok;
    if (loss_sum) *loss_sum = ls;
    return SL_OK;
}

/* ---- the file format --------------------------------------------------------------------------
 */

static const unsigned char MLP_MAGIC[8] = {'S', 'L', 'M', 'L', 'P', '\r', '\n', 0x1a};
#define MLP_VERSION 1u

static size_t header_size(int nsizes) {
    return 8 + 4 + 4 + 4 + 4 * (size_t)nsizes + 8;
}

sl_status sl_mlp_serialize(const sl_mlp *m, void *buf, size_t cap, size_t *size, sl_err *err) {
    SL_ASSERT(size != NULL);
    const size_t hdr = header_size(m->cfg.nsizes);
    const size_t need = hdr + 4 * (size_t)m->nparams + 4;
    *size = need;
    if (!buf) return SL_OK;
    if (cap < need)
        return sl_err_set(err, SL_EINVAL, "MLP serialize: buffer of %zu bytes, need %zu", cap,
                          need);
    unsigned char *p = buf;
    memcpy(p, MLP_MAGIC, 8);
    sl__put_u32(p + 8, MLP_VERSION);
    sl__put_u32(p + 12, (uint32_t)m->cfg.activation);
    sl__put_u32(p + 16, (uint32_t)m->cfg.nsizes);
    for (int i = 0; i < m->cfg.nsizes; i++) sl__put_u32(p + 20 + 4 * i, (uint32_t)m->cfg.sizes[i]);
    sl__put_u64(p + hdr - 8, (uint64_t)m->nparams);
    /* floats: fetch to the host in place, then make them little-endian */
    float *data = (float *)(void *)(p + hdr);
    float *tmp = NULL;
    if (((uintptr_t)data) % sizeof(float) != 0) {
        tmp = sl__malloc((size_t)m->nparams * sizeof(float), err);
        if (!tmp) return SL_ENOMEM;
    }
    sl_status st = m->be->download(m, tmp ? tmp : data, m->params, m->nparams, err);
    if (st != SL_OK) {
        free(tmp);
        return st;
    }
    const float *src = tmp ? tmp : data;
    for (int64_t i = 0; i < m->nparams; i++) {
        uint32_t bits;
        memcpy(&bits, &src[i], 4);
        sl__put_u32(p + hdr + 4 * (size_t)i, bits);
    }
    free(tmp);
    sl__put_u32(p + need - 4, sl__crc32(p, need - 4));
    return SL_OK;
}

/* Checks the header of a file of `size` bytes from its first `avail` bytes at p (all of it, or at
 * least header_size(SL_MLP_MAX_SIZES) of a longer one), everything but the checksum; on success
 * *hdr and *nparams describe the data. */
static sl_status check_header(const unsigned char *p, size_t avail, uint64_t size,
                              sl_mlp_config *cfg, size_t *hdr, uint64_t *nparams, sl_err *err) {
    if (avail < 8 || memcmp(p, MLP_MAGIC, 8) != 0)
        return sl_err_set(err, SL_EFORMAT, "not an sluice MLP file (%s)",
                          avail < 8 ? "too short for the magic" : "bad magic");
    if (avail < 20)
        return sl_err_set(err, SL_EFORMAT, "MLP file truncated: %llu bytes",
                          (unsigned long long)size);
    uint32_t version = sl__get_u32(p + 8);
    if (version != MLP_VERSION)
        return sl_err_set(err, SL_EFORMAT, "MLP file version %u, this build reads %u", version,
                          MLP_VERSION);
    uint32_t act = sl__get_u32(p + 12), nsizes = sl__get_u32(p + 16);
    if (nsizes < 2 || nsizes > SL_MLP_MAX_SIZES)
        return sl_err_set(err, SL_EFORMAT, "MLP file: %u layer sizes (2..%d allowed)", nsizes,
                          SL_MLP_MAX_SIZES);
    *hdr = header_size((int)nsizes);
    if (size < *hdr + 4 || avail < *hdr)
        return sl_err_set(err, SL_EFORMAT,
                          "MLP file truncated: %llu bytes, the header alone is %zu",
                          (unsigned long long)size, *hdr + 4);
    memset(cfg, 0, sizeof *cfg);
    cfg->nsizes = (int)nsizes;
    cfg->activation = (sl_activation)act;
    uint64_t want = 0;
    for (uint32_t i = 0; i < nsizes; i++) {
        uint32_t s = sl__get_u32(p + 20 + 4 * i);
        if (s < 1 || s > (1u << 20))
            return sl_err_set(err, SL_EFORMAT, "MLP file: layer size %u out of range", s);
        cfg->sizes[i] = (int)s;
        if (i > 0) want += (uint64_t)cfg->sizes[i - 1] * s + s;
    }
    if (act > SL_ACT_RELU)
        return sl_err_set(err, SL_EFORMAT, "MLP file: unknown activation %u", act);
    *nparams = sl__get_u64(p + *hdr - 8);
    if (*nparams != want)
        return sl_err_set(err, SL_EFORMAT, "MLP file: %llu parameters for sizes needing %llu",
                          (unsigned long long)*nparams, (unsigned long long)want);
    uint64_t total = *hdr + 4 * *nparams + 4; /* sizes of at most 2^20: no wrap */
    if (size < total)
        return sl_err_set(err, SL_EFORMAT, "MLP file truncated: %llu of %llu bytes",
                          (unsigned long long)size, (unsigned long long)total);
    if (size > total)
        return sl_err_set(err, SL_EFORMAT, "MLP file has %llu bytes after its end",
                          (unsigned long long)(size - total));
    return SL_OK;
}

/* Parses and checks a whole file's bytes; on success *hdr and *nparams describe the data. */
static sl_status parse_header(const unsigned char *p, size_t size, sl_mlp_config *cfg, size_t *hdr,
                              uint64_t *nparams, sl_err *err) {
    SL_TRY(check_header(p, size, size, cfg, hdr, nparams, err));
    size_t total = size; /* check_header found them equal */
    uint32_t crc = sl__crc32(p, total - 4), stored = sl__get_u32(p + total - 4);
    if (crc != stored)
        return sl_err_set(err, SL_ECHECKSUM,
                          "MLP file checksum mismatch (stored %08x, computed %08x): the file was "
                          "altered or damaged",
                          stored, crc);
    return SL_OK;
}

sl_status sl_mlp_peek_config(const void *buf, size_t size, sl_mlp_config *cfg, sl_err *err) {
    size_t hdr;
    uint64_t n;
    SL_TRY(parse_header(buf, size, cfg, &hdr, &n, err));
    cfg->init_scale = 0.1;
    return SL_OK;
}

sl_status sl_mlp_deserialize(sl_mlp *m, const void *buf, size_t size, sl_err *err) {
    sl_mlp_config cfg;
    size_t hdr;
    uint64_t n;
    const unsigned char *p = buf;
    SL_TRY(parse_header(p, size, &cfg, &hdr, &n, err));
    if (!same_sizes(&cfg, &m->cfg)) return sizes_mismatch(&m->cfg, &cfg, "MLP load", err);
    if (cfg.activation != m->cfg.activation)
        return sl_err_set(err, SL_EINVAL, "MLP load: the file's activation is %s, the model's %s",
                          cfg.activation == SL_ACT_TANH ? "tanh" : "relu",
                          m->cfg.activation == SL_ACT_TANH ? "tanh" : "relu");
    float *host = sl__alloc_host((size_t)n * sizeof(float), SL_ALIGN, err);
    if (!host) return SL_ENOMEM;
    for (uint64_t i = 0; i < n; i++) {
        uint32_t bits = sl__get_u32(p + hdr + 4 * (size_t)i);
        memcpy(&host[i], &bits, 4);
    }
    sl_status st = m->be->upload(m, m->params, host, (int64_t)n, err);
    sl__alloc_host_free(host);
    return st;
}

sl_status sl_mlp_save(const sl_mlp *m, const char *path, sl_err *err) {
    size_t size;
    SL_TRY(sl_mlp_serialize(m, NULL, 0, &size, err));
    unsigned char *buf = sl__malloc(size, err);
    if (!buf) return SL_ENOMEM;
    sl_status st = sl_mlp_serialize(m, buf, size, &size, err);
    if (st == SL_OK) st = sl__file_write_whole(path, "saving the MLP:", buf, size, err);
    free(buf);
    return st;
}

/* Reads a model file whole into a malloc'd buffer, after looking at it: a regular file (a FIFO
 * would block, a directory reads as anything) whose header is a model's and gives the file's size,
 * so that no byte past the header is read, and nothing allocated for it, before that is known. */
static sl_status read_file(const char *path, unsigned char **out, size_t *size, sl_err *err) {
    *out = NULL;
    int fd;
    uint64_t fsize;
    SL_TRY(sl__file_open_regular(path, "MLP file", &fd, &fsize, err));
    unsigned char head[8 + 4 + 4 + 4 + 4 * SL_MLP_MAX_SIZES + 8];
    size_t avail = fsize < sizeof head ? (size_t)fsize : sizeof head;
    sl_mlp_config cfg;
    size_t hdr;
    uint64_t n;
    sl_status st = sl__file_pread_full(fd, head, avail, 0, "MLP file", path, err);
    if (st == SL_OK) {
        st = check_header(head, avail, fsize, &cfg, &hdr, &n, err);
        if (st != SL_OK) sl_err_prefix(err, "%s: ", path);
    }
    unsigned char *buf = NULL;
    if (st == SL_OK && !(buf = sl__malloc((size_t)fsize, err))) st = SL_ENOMEM;
    if (st == SL_OK) st = sl__file_pread_full(fd, buf, (size_t)fsize, 0, "MLP file", path, err);
    close(fd);
    if (st != SL_OK) {
        free(buf);
        return st;
    }
    *out = buf;
    *size = (size_t)fsize;
    return SL_OK;
}

sl_status sl_mlp_load_into(sl_mlp *m, const char *path, sl_err *err) {
    unsigned char *buf;
    size_t size;
    SL_TRY(read_file(path, &buf, &size, err));
    sl_status st = sl_mlp_deserialize(m, buf, size, err);
    free(buf);
    if (st != SL_OK) sl_err_prefix(err, "%s: ", path);
    return st;
}

sl_status sl_mlp_load(const char *path, sl_device dev, sl_mlp **out, sl_err *err) {
    SL_ASSERT(out != NULL);
    *out = NULL;
    unsigned char *buf;
    size_t size;
    SL_TRY(read_file(path, &buf, &size, err));
    sl_mlp_config cfg;
    sl_mlp *m = NULL;
    sl_status st = sl_mlp_peek_config(buf, size, &cfg, err);
    if (st == SL_OK) st = sl_mlp_create(&cfg, dev, &m, err);
    if (st == SL_OK) st = sl_mlp_deserialize(m, buf, size, err);
    free(buf);
    if (st != SL_OK) {
        sl_mlp_free(m);
        sl_err_prefix(err, "%s: ", path);
        return st;
    }
    *out = m;
    return SL_OK;
}
