/* SPDX-License-Identifier: Apache-2.0 */
/* The CPU backend of sl_mlp: forward and backward in float32 with OpenBLAS cblas_sgemm, row-major.
 * Per layer l (n = sizes[l] inputs, o = sizes[l+1] outputs, B rows):
 *   forward   z_l = a_{l-1} @ w_l + b_l          a_l = act(z_l); last layer: logprobs = z - lse(z)
 *   backward  dz_L = (softmax(z_L) * sum_c(y) - y) / B
 *             dw_l = a_{l-1}^T @ dz_l            db_l = sum_rows(dz_l)
 *             dz_{l-1} = (dz_l @ w_l^T) * act'(a_{l-1})   (tanh: 1 - a^2; relu: a > 0)
 * Activations are kept from the forward pass (act[l], (B, sizes[l+1])) and grow with the batch;
 * the logsumexp and the loss are accumulated in double. Row sums run in row order, so results do
 * not depend on anything but the inputs (and OpenBLAS's own blocking). */
#include "train/mlp.h"

#include "core/alloc.h"
#include "core/log.h"

#include <cblas.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/resource.h>

typedef struct cpu_impl {
    float *act[SL__MLP_MAX_LAYERS]; /* act[l]: (rows, sizes[l+1]); the last holds logprobs */
    float *dz[2];                   /* (rows, max size) each, backward ping-pong */
    int64_t rows;                   /* capacity in rows */
} cpu_impl;

/* OpenBLAS 0.3.21 does not know newer x86 CPUs (Sapphire Rapids and later) and falls back to its
 * SSE3 "Prescott" kernels, several times slower than the AVX-512 ones the CPU can run. The choice
 * is made when OpenBLAS loads (OPENBLAS_CORETYPE), before any code of ours runs, so all the library
 * can do is say so. */
void sl__mlp_cpu_share_threads(int replicas) {
    static int full = 0; /* OpenBLAS's own thread count, before we first changed it */
    if (!full) full = openblas_get_num_threads();
    int n = replicas > 1 ? full / replicas : full;
    openblas_set_num_threads(n > 0 ? n : 1);
}

void sl_mlp_blas_info(const char **core, const char **suggested_coretype) {
    const char *name = openblas_get_corename();
    const char *suggest = NULL;
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
    if (name && strcasecmp(name, "prescott") == 0) {
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx512f"))
            suggest = "SkylakeX";
        else if (__builtin_cpu_supports("avx2"))
            suggest = "Haswell";
    }
#endif
    if (core) *core = name ? name : "unknown";
    if (suggested_coretype) *suggested_coretype = suggest;
}

/* OpenBLAS 0.3.21 keeps a table of work buffers (driver/others/memory.c): each thread of its own
 * maps one when it first runs (as the library loads, or as late as the first sgemm it takes part
 * in: a first call with room for one buffer spun 3 times in 60 on two cores), and a thread that
 * calls sgemm takes the first free one, mapping it at that call if nobody has yet. Once mapped a
 * buffer is kept, so after the first call only a call that makes more callers at once than ever
 * before maps anything. A mapping that fails is tried again, for ever, at 100% CPU: an
 * address-space limit (ulimit -v) made `sluice train` spin for good. So before such a call the
 * backend maps as much itself (the first call: its own and every OpenBLAS thread's) and gives it
 * back: when that fails, the call is refused with SL_ENOMEM instead. The size is BUFFER_SIZE of
 * OpenBLAS's build: 32 << 22 bytes on x86_64 (the mmap the first sgemm of a fresh process makes
 * asks for exactly 134217728 bytes); other builds use that size or less. */
#define BLAS_BUFFER_BYTES ((size_t)128 << 20)
static atomic_int blas_inside; /* callers of cblas_sgemm through this backend, now */
static atomic_int
    blas_buffers; /* buffers mapped: the most callers at once, and OpenBLAS's threads */

/* Buffers a call needs mapped with n callers inside: theirs and those of OpenBLAS's own threads. */
static int blas_needed(int n) {
    int own = openblas_get_num_threads() - 1;
    return n + (own > 0 ? own : 0);
}

void sl_mlp_blas_threads(int *threads, size_t *buffer_bytes) {
    if (threads) *threads = openblas_get_num_threads();
    if (buffer_bytes) *buffer_bytes = BLAS_BUFFER_BYTES;
}

/* Counts the caller in (*me: how many are inside with it) once OpenBLAS is sure to find the
 * buffer it needs; what names the call for the message. */
static sl_status blas_enter(const char *what, int *me, sl_err *err) {
    int n = atomic_fetch_add(&blas_inside, 1) + 1;
    int have = atomic_load(&blas_buffers), need = blas_needed(n);
    *me = n;
    if (need <= have) return SL_OK;
    size_t want = (size_t)(need - have) * BLAS_BUFFER_BYTES;
    void *p = mmap(NULL, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) {
        munmap(p, want);
        return SL_OK;
    }
    int e = errno;
    atomic_fetch_sub(&blas_inside, 1);
    char limit[96] = "";
    struct rlimit as, data;
    if (getrlimit(RLIMIT_AS, &as) != 0) as.rlim_cur = RLIM_INFINITY;
    if (getrlimit(RLIMIT_DATA, &data) != 0) data.rlim_cur = RLIM_INFINITY;
    if (as.rlim_cur != RLIM_INFINITY)
        snprintf(limit, sizeof limit, " (the address-space limit, ulimit -v, is %llu MiB)",
                 (unsigned long long)(as.rlim_cur >> 20));
    else if (data.rlim_cur != RLIM_INFINITY)
        snprintf(limit, sizeof limit, " (the data-size limit, ulimit -d, is %llu MiB)",
                 (unsigned long long)(data.rlim_cur >> 20));
    return sl_err_set(err, SL_ENOMEM,
                      "%s: OpenBLAS's sgemm would map %zu MiB of work buffer for this call and "
                      "the process cannot map it: %s%s",
                      what, want >> 20, strerror(e), limit);
}

/* Counts the caller out; its buffer, and those of the OpenBLAS threads the call ran on, are mapped
 * now. */
static void blas_leave(int me) {
    int have = atomic_load(&blas_buffers), mapped = blas_needed(me);
    while (mapped > have && !atomic_compare_exchange_weak(&blas_buffers, &have, mapped)) {
    }
    atomic_fetch_sub(&blas_inside, 1);
}

static pthread_once_t blas_once = PTHREAD_ONCE_INIT;

static void warn_blas_core(void) {
    const char *core, *suggest;
    sl_mlp_blas_info(&core, &suggest);
    if (suggest)
        sl__log(SL_LOG_WARN,
                "OpenBLAS runs its generic '%s' kernels on this CPU, which can do better: sgemm is "
                "several times slower than it could be; start the program with "
                "OPENBLAS_CORETYPE=%s",
                core, suggest);
}

static sl_status cpu_init(sl_mlp *m, sl_err *err) {
    pthread_once(&blas_once, warn_blas_core);
    size_t bytes = (size_t)m->nparams * sizeof(float);
    m->params = sl__alloc_host(bytes, SL_ALIGN, err);
    m->grads = sl__alloc_host(bytes, SL_ALIGN, err);
    m->impl = sl__calloc(1, sizeof(cpu_impl), err);
    if (!m->params || !m->grads || !m->impl) return SL_ENOMEM;
    memset(m->grads, 0, bytes);
    return SL_OK;
}

static void free_scratch(cpu_impl *c) {
    for (int l = 0; l < SL__MLP_MAX_LAYERS; l++) {
        sl__alloc_host_free(c->act[l]);
        c->act[l] = NULL;
    }
    for (int i = 0; i < 2; i++) {
        sl__alloc_host_free(c->dz[i]);
        c->dz[i] = NULL;
    }
    c->rows = 0;
}

static void cpu_release(sl_mlp *m) {
    if (m->impl) free_scratch(m->impl);
    free(m->impl);
    sl__alloc_host_free(m->params);
    sl__alloc_host_free(m->grads);
    m->impl = NULL;
    m->params = m->grads = NULL;
}

static sl_status cpu_upload(sl_mlp *m, float *dst, const float *host, int64_t n, sl_err *err) {
    if (n) memcpy(dst, host, (size_t)n * sizeof(float));
    return SL_OK;
}

static sl_status cpu_download(const sl_mlp *m, float *host, const float *src, int64_t n,
                              sl_err *err) {
    if (n) memcpy(host, src, (size_t)n * sizeof(float));
    return SL_OK;
}

static sl_status reserve(sl_mlp *m, cpu_impl *c, int64_t rows, sl_err *err) {
    if (rows <= c->rows) return SL_OK;
    free_scratch(c);
    int maxn = 0;
    for (int l = 0; l <= m->nlayers; l++) maxn = SL_MAX(maxn, m->cfg.sizes[l]);
    for (int l = 0; l < m->nlayers; l++) {
        c->act[l] = sl__alloc_host((size_t)rows * (size_t)m->cfg.sizes[l + 1] * sizeof(float),
                                   SL_ALIGN, err);
        if (!c->act[l]) goto fail;
    }
    for (int i = 0; i < 2; i++) {
        c->dz[i] = sl__alloc_host((size_t)rows * (size_t)maxn * sizeof(float), SL_ALIGN, err);
        if (!c->dz[i]) goto fail;
    }
    c->rows = rows;
    return SL_OK;
fail:
    free_scratch(c);
    sl_err_prefix(err, "MLP scratch for %lld rows: ", (long long)rows);
    return SL_ENOMEM;
}

/* Row stride of a checked (B, n) f32 tensor, in elements. */
static int ld_of(const sl_tensor *t) {
    return (int)(t->strides[0] / (int64_t)sizeof(float));
}

static void log_softmax_rows(float *z, int64_t rows, int n) {
    for (int64_t r = 0; r < rows; r++) {
        float *row = z + r * n;
        float mx = row[0];
        for (int j = 1; j < n; j++) mx = row[j] > mx ? row[j] : mx;
        double s = 0;
        for (int j = 0; j < n; j++) s += exp((double)row[j] - (double)mx);
        float lse = (float)((double)mx + log(s));
        for (int j = 0; j < n; j++) row[j] -= lse;
    }
}

static sl_status cpu_forward(sl_mlp *m, const sl_tensor *x, sl_err *err) {
    cpu_impl *c = m->impl;
    const int64_t B = x->shape[0];
    SL_TRY(reserve(m, c, B, err));
    int me;
    SL_TRY(blas_enter("MLP forward", &me, err));
    const float *a = x->data;
    int lda = ld_of(x);
    for (int l = 0; l < m->nlayers; l++) {
        const int n = m->cfg.sizes[l], o = m->cfg.sizes[l + 1];
        const float *w = m->params + m->w_off[l], *b = m->params + m->b_off[l];
        float *z = c->act[l]; /* (B, o) */
        for (int64_t r = 0; r < B; r++) memcpy(z + r * o, b, (size_t)o * sizeof(float));
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)B, o, n, 1.0f, a, lda, w, o,
                    1.0f, z, o);
        const int64_t count = B * o;
        if (l + 1 < m->nlayers) {
            if (m->cfg.activation == SL_ACT_TANH)
                for (int64_t i = 0; i < count; i++) z[i] = tanhf(z[i]);
            else
                for (int64_t i = 0; i < count; i++) z[i] = z[i] > 0.0f ? z[i] : 0.0f;
        } else {
            log_softmax_rows(z, B, o);
        }
        a = z;
        lda = o;
    }
    blas_leave(me);
    m->batch = B;
    return SL_OK;
}

static sl_status cpu_loss_sum(sl_mlp *m, const sl_tensor *y, double *sum, sl_err *err) {
    const cpu_impl *c = m->impl;
    const int C = m->cfg.sizes[m->nlayers];
    const float *lp = c->act[m->nlayers - 1];
    const int ldy = ld_of(y);
    double s = 0;
    for (int64_t r = 0; r < m->batch; r++) {
        const float *yr = (const float *)y->data + r * ldy;
        double row = 0;
        for (int j = 0; j < C; j++) row += (double)lp[r * C + j] * (double)yr[j];
        s -= row;
    }
    *sum = s;
    return SL_OK;
}

static sl_status cpu_backward(sl_mlp *m, const sl_tensor *x, const sl_tensor *y, sl_err *err) {
    cpu_impl *c = m->impl;
    const int64_t B = m->batch;
    const int L = m->nlayers;
    const int C = m->cfg.sizes[L];
    const float inv_b = 1.0f / (float)B;
    const int ldy = ld_of(y);

    int me;
    SL_TRY(blas_enter("MLP backward", &me, err));
    /* d loss / d logits: (softmax * sum(y) - y) / B  -> dz[0] (B, C) */
    float *dz = c->dz[0];
    const float *lp = c->act[L - 1];
    for (int64_t r = 0; r < B; r++) {
        const float *yr = (const float *)y->data + r * ldy;
        float ysum = 0;
        for (int j = 0; j < C; j++) ysum += yr[j];
        for (int j = 0; j < C; j++) dz[r * C + j] = (expf(lp[r * C + j]) * ysum - yr[j]) * inv_b;
    }
    int cur = 0;
    for (int l = L - 1; l >= 0; l--) {
        const int n = m->cfg.sizes[l], o = m->cfg.sizes[l + 1];
        const float *a_prev = l == 0 ? (const float *)x->data : c->act[l - 1];
        const int lda = l == 0 ? ld_of(x) : n;
        float *gw = m->grads + m->w_off[l], *gb = m->grads + m->b_off[l];
        const float *w = m->params + m->w_off[l];
        dz = c->dz[cur];
        /* dw (n, o) = a_prev^T (n, B) @ dz (B, o) */
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, n, o, (int)B, 1.0f, a_prev, lda, dz, o,
                    0.0f, gw, o);
        /* db (o) = sum over rows of dz */
        memset(gb, 0, (size_t)o * sizeof(float));
        for (int64_t r = 0; r < B; r++)
            for (int j = 0; j < o; j++) gb[j] += dz[r * o + j];
        if (l == 0) break;
        /* da (B, n) = dz (B, o) @ w^T (o, n), then times act'(a_prev) */
        float *da = c->dz[1 - cur];
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)B, n, o, 1.0f, dz, o, w, o, 0.0f,
                    da, n);
        const int64_t count = B * n;
        if (m->cfg.activation == SL_ACT_TANH)
            for (int64_t i = 0; i < count; i++) da[i] *= 1.0f - a_prev[i] * a_prev[i];
        else
            for (int64_t i = 0; i < count; i++) da[i] = a_prev[i] > 0.0f ? da[i] : 0.0f;
        cur = 1 - cur;
    }
    blas_leave(me);
    return SL_OK;
}

static sl_status cpu_logprobs(sl_mlp *m, sl_tensor *out, sl_err *err) {
    const cpu_impl *c = m->impl;
    sl_tensor src;
    int64_t shape[2] = {m->batch, m->cfg.sizes[m->nlayers]};
    SL_TRY(sl_tensor_wrap(&src, c->act[m->nlayers - 1], SL_DTYPE_F32, sl_cpu(), 2, shape, NULL));
    return sl_tensor_copy(out, &src, NULL, err);
}

const sl__mlp_backend sl__mlp_cpu_backend = {
    .name = "cpu",
    .init = cpu_init,
    .release = cpu_release,
    .upload = cpu_upload,
    .download = cpu_download,
    .forward = cpu_forward,
    .loss_sum = cpu_loss_sum,
    .backward = cpu_backward,
    .logprobs = cpu_logprobs,
}; /* the optional asynchronous entries stay NULL */
