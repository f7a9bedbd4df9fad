/* SPDX-License-Identifier: Apache-2.0 */
/* `sluice train`'s model ends and start-up overlaps (train_parts.h). */
#include "train_parts.h"

#include "common.h"

#include "sluice/checkpoint.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What the model's ends are made from: a pipeline's images output (its per-sample shape, whose
 * product is the model's inputs) and labels output (one-hot: its width is the class count; class
 * ids: the count comes from num_classes). */
typedef struct out_shapes {
    int ndim; /* per sample */
    int64_t shape[SL_MAX_DIMS];
    int64_t inputs;
    int64_t classes; /* one-hot width, or -1 for class ids */
    char images[64], labels[64];
} out_shapes;

static void shape_str(const int64_t *shape, int ndim, char *buf, size_t size) {
    size_t n = (size_t)snprintf(buf, size, "(");
    for (int i = 0; i < ndim && n < size; i++)
        n += (size_t)snprintf(buf + n, size - n, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (n < size) snprintf(buf + n, size - n, ndim == 1 ? ",)" : ")");
}

/* The shapes of a pipeline's first batch (device 0's part). which: "training" or "validation". */
static sl_status batch_shapes(sl_iter *it, const sl_iter_batch *b, const char *which,
                              const char *file, out_shapes *o, sl_err *e) {
    memset(o, 0, sizeof *o);
    if (sl_iter_num_outputs(it) != 2)
        return sl_err_set(e, SL_EINVAL,
                          "%s: the %s pipeline has %d output(s); sluice train takes two: images "
                          "and labels",
                          file, which, sl_iter_num_outputs(it));
    snprintf(o->images, sizeof o->images, "%s", sl_iter_output_name(it, 0));
    snprintf(o->labels, sizeof o->labels, "%s", sl_iter_output_name(it, 1));
    sl_tensor x, y;
    char d[96];
    if (sl_iter_shard(b, 0, 0, &x, e))
        return sl_err_prefix(e,
                             "%s: the %s pipeline's output '%s' (the model's inputs) must have "
                             "one shape for every sample (fn.resize to one size): ",
                             file, which, o->images);
    if (x.dtype != SL_DTYPE_F32 || x.ndim < 2)
        return sl_err_set(e, SL_EINVAL,
                          "%s: the %s pipeline's output '%s' is %s; the model takes float32 "
                          "(B, ...) (crop_mirror_normalize(..., dtype=types.FLOAT) makes it)",
                          file, which, o->images, sl_tensor_describe(&x, d, sizeof d));
    o->ndim = x.ndim - 1;
    o->inputs = 1;
    for (int i = 1; i < x.ndim; i++) o->shape[i - 1] = x.shape[i], o->inputs *= x.shape[i];
    if (sl_iter_shard(b, 1, 0, &y, e))
        return sl_err_prefix(e, "%s: the %s pipeline's output '%s': ", file, which, o->labels);
    if (y.dtype == SL_DTYPE_F32 && y.ndim == 2) {
        o->classes = y.shape[1];
    } else if (!sl_dtype_is_float(y.dtype) && y.dtype != SL_DTYPE_BOOL &&
               (y.ndim == 1 || (y.ndim == 2 && y.shape[1] == 1))) {
        o->classes = -1;
    } else {
        return sl_err_set(e, SL_EINVAL,
                          "%s: the %s pipeline's output '%s' is %s; labels are class ids (B,) or "
                          "(B, 1) of an integer type, or one-hot float32 (B, classes)",
                          file, which, o->labels, sl_tensor_describe(&y, d, sizeof d));
    }
    return SL_OK;
}

/* Same inputs: the same per-sample shape, or a flat one of the same size. */
static bool same_inputs(const out_shapes *a, const out_shapes *b) {
    if (a->inputs != b->inputs) return false;
    if (a->ndim == 1 || b->ndim == 1) return true;
    return a->ndim == b->ndim && !memcmp(a->shape, b->shape, (size_t)a->ndim * sizeof a->shape[0]);
}

void sl_cli_sizes_line(const sl_mlp_config *m, char *buf, size_t size) {
    size_t n = 0;
    for (int i = 0; i < m->nsizes && n < size; i++)
        n += (size_t)snprintf(buf + n, size - n, "%s%d", i ? " -> " : "", m->sizes[i]);
}

/* A pipeline's first batch, or an error naming the file. */
static sl_status first_batch(sl_iter *it, const char *file, const char *which,
                             const sl_iter_batch **b, sl_err *e) {
    sl_status st = sl_iter_next(it, b);
    if (st == SL_EOF)
        return sl_err_set(e, SL_EINVAL, "%s: the %s epoch has no batches", file, which);
    if (st) return sl_err_set(e, st, "%s", sl_iter_errmsg(it));
    return SL_OK;
}

/* Takes each pipeline's first batch (val: NULL on ranks that do not validate) and sets the model's
 * inputs and classes from their outputs; resuming without --hidden, the hidden sizes are the
 * checkpoint's. why: where the sizes came from, for the "model:" line. */
sl_status sl_cli_model_ends(sl_iter *train, sl_iter *val, const char *tfile, const char *vfile,
                            const char *user_classes, const char *map_classes,
                            const char *classes_from, bool resume, bool hidden_given,
                            const sl_iter_batch **first, const sl_iter_batch **vfirst,
                            bool *class_ids, sl_mlp_config *m, char *why, size_t nwhy, sl_err *e) {
    out_shapes ts, vs;
    SL_CLI_TRY(first_batch(train, tfile, "training", first, e));
    SL_CLI_TRY(batch_shapes(train, *first, "training", tfile, &ts, e));
    char tshape[96], vshape[96], cwhy[4400];
    shape_str(ts.shape, ts.ndim, tshape, sizeof tshape);
    int64_t classes = ts.classes;
    *class_ids = classes < 0;
    long long given = -1;
    if (user_classes) {
        char *end;
        given = strtoll(user_classes, &end, 10);
        if (end == user_classes || *end || given < 1)
            return sl_err_set(e, SL_EINVAL,
                              "--arg num_classes=%s: a class count (a whole number >= 1) wanted",
                              user_classes);
    }
    if (classes >= 0) {
        if (given >= 0 && given != classes)
            return sl_err_set(e, SL_EINVAL,
                              "--arg num_classes=%lld, but %s's labels '%s' are one-hot of width "
                              "%lld",
                              given, tfile, ts.labels, (long long)classes);
        snprintf(cwhy, sizeof cwhy, "'%s' one-hot of width %lld", ts.labels, (long long)classes);
    } else if (given >= 0) {
        classes = given;
        snprintf(cwhy, sizeof cwhy, "'%s' class ids, --arg num_classes=%lld", ts.labels, given);
    } else if (classes_from[0]) {
        classes = atoi(map_classes);
        snprintf(cwhy, sizeof cwhy, "'%s' class ids, %lld in %s", ts.labels, (long long)classes,
                 classes_from);
    } else {
        return sl_err_set(e, SL_EINVAL,
                          "%s: the labels '%s' are class ids and nothing says how many classes "
                          "there are: give --arg num_classes=N (or convert the images with "
                          "sluice convert --from folder, which writes labels.txt)",
                          tfile, ts.labels);
    }
    if (val) {
        SL_CLI_TRY(first_batch(val, vfile, "validation", vfirst, e));
        SL_CLI_TRY(batch_shapes(val, *vfirst, "validation", vfile, &vs, e));
        shape_str(vs.shape, vs.ndim, vshape, sizeof vshape);
        if (!same_inputs(&ts, &vs))
            return sl_err_set(e, SL_EINVAL,
                              "the training pipeline's '%s' are %s per sample (%lld inputs), the "
                              "validation pipeline's '%s' %s (%lld inputs): one model takes "
                              "both (%s, %s)",
                              ts.images, tshape, (long long)ts.inputs, vs.images, vshape,
                              (long long)vs.inputs, tfile, vfile);
        if (vs.classes >= 0 && vs.classes != classes)
            return sl_err_set(e, SL_EINVAL,
                              "the validation pipeline's labels '%s' are one-hot of width %lld, "
                              "the model has %lld classes (%s: %s)",
                              vs.labels, (long long)vs.classes, (long long)classes, tfile, cwhy);
    }
    if (ts.inputs > INT_MAX || classes > INT_MAX)
        return sl_err_set(e, SL_EINVAL,
                          "%s: %lld inputs and %lld classes are too many for the model", tfile,
                          (long long)ts.inputs, (long long)classes);
    m->sizes[0] = (int)ts.inputs;
    m->sizes[m->nsizes - 1] = (int)classes;
    size_t n = 0;
    const void *extra = resume ? sl_iter_resumed_extra(train, &n) : NULL;
    sl_mlp_config saved;
    if (extra && sl_trainer_state_peek(extra, n, &saved, NULL) == SL_OK) {
        if (!hidden_given && saved.nsizes >= 2) {
            m->nsizes = saved.nsizes;
            memcpy(m->sizes + 1, saved.sizes + 1, (size_t)(saved.nsizes - 2) * sizeof m->sizes[0]);
            m->sizes[0] = (int)ts.inputs;
            m->sizes[m->nsizes - 1] = (int)classes;
        }
        bool same = saved.nsizes == m->nsizes;
        for (int i = 0; same && i < m->nsizes; i++) same = saved.sizes[i] == m->sizes[i];
        if (!same) {
            char a[256], b[256];
            sl_cli_sizes_line(&saved, a, sizeof a);
            sl_cli_sizes_line(m, b, sizeof b);
            return sl_err_set(e, SL_EINVAL,
                              "the checkpoint holds a %s model; the pipelines and --hidden make %s "
                              "(inputs: '%s' %s per sample; classes: %s)",
                              a, b, ts.images, tshape, cwhy);
        }
    }
    snprintf(why, nwhy, "inputs: '%s' %s per sample; classes: %s", ts.images, tshape, cwhy);
    return SL_OK;
}

double sl_cli_process_age(void) {
    double up = -1;
    unsigned long long start = 0;
    FILE *f = fopen("/proc/uptime", "r");
    if (f) {
        if (fscanf(f, "%lf", &up) != 1) up = -1;
        fclose(f);
    }
    char buf[1024];
    f = fopen("/proc/self/stat", "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')'); /* the fields after the command name; starttime is 22nd */
    for (int field = 2; p && *p && field < 22; p++)
        if (*p == ' ') field++;
    if (up < 0 || !p || sscanf(p, "%llu", &start) != 1) return -1;
    long hz = sysconf(_SC_CLK_TCK);
    return hz > 0 ? up - (double)start / (double)hz : -1;
}

static void *nccl_setup_run(void *arg) {
    sl_cli_nccl *ns = arg;
    ns->st = sl_comm_create(&ns->cc, ns->comms, SL_MAX_DEVICES, NULL, &ns->err);
    if (ns->st) sl_err_prefix(&ns->err, "NCCL group of %d GPUs: ", ns->cc.size);
    return NULL;
}

void sl_cli_nccl_start(sl_cli_nccl *ns, const sl_device *devices, int n, const void *mpi_comm) {
    memset(ns, 0, sizeof *ns);
    ns->cc.kind = SL_COMM_NCCL;
    ns->cc.size = n;
    ns->cc.devices = devices;
    ns->cc.mpi_comm = mpi_comm;
    ns->started = pthread_create(&ns->thread, NULL, nccl_setup_run, ns) == 0;
}

/* a throwaway model's forward/backward on one GPU (sl_cli_warm_gpus) */
typedef struct warm_job {
    pthread_t thread;
    int started;
    const sl_mlp_config *mc;
    sl_device dev;
    int rows;
} warm_job;

static void *warm_run(void *arg) {
    warm_job *j = arg;
    sl_err e;
    sl_mlp *m = NULL;
    sl_tensor x, y;
    memset(&x, 0, sizeof x);
    memset(&y, 0, sizeof y);
    const int64_t xs[2] = {j->rows, j->mc->sizes[0]};
    const int64_t ys[2] = {j->rows, j->mc->sizes[j->mc->nsizes - 1]};
    if (sl_mlp_create(j->mc, j->dev, &m, &e) == SL_OK &&
        sl_tensor_alloc(&x, SL_DTYPE_F32, j->dev, 2, xs, NULL, &e) == SL_OK &&
        sl_tensor_alloc(&y, SL_DTYPE_F32, j->dev, 2, ys, NULL, &e) == SL_OK &&
        sl_tensor_fill(&x, 0, NULL, &e) == SL_OK && sl_tensor_fill(&y, 0, NULL, &e) == SL_OK)
        (void)sl_mlp_loss_grad(m, &x, &y, NULL, &e);
    sl_tensor_free(&x);
    sl_tensor_free(&y);
    sl_mlp_free(m);
    return NULL;
}

void sl_cli_warm_gpus(const sl_mlp_config *mc, const sl_device *devs, int n, int rows) {
    warm_job jobs[SL_MAX_DEVICES];
    for (int k = 0; k < n; k++) {
        jobs[k] = (warm_job){.mc = mc, .dev = devs[k], .rows = rows};
        jobs[k].started = pthread_create(&jobs[k].thread, NULL, warm_run, &jobs[k]) == 0;
    }
    for (int k = 0; k < n; k++)
        if (jobs[k].started) pthread_join(jobs[k].thread, NULL);
}

sl_status sl_cli_nccl_join(sl_cli_nccl *ns, sl_err *err) {
    if (!ns->started) return SL_OK;
    pthread_join(ns->thread, NULL);
    ns->started = 0;
    return ns->st ? sl_err_copy(err, &ns->err) : SL_OK;
}

void sl_cli_ck_name(const char *ck_path, int epoch, char *buf, size_t size) {
    const char *mark = strstr(ck_path, "{epoch}");
    if (mark)
        snprintf(buf, size, "%.*s%d%s", (int)(mark - ck_path), ck_path, epoch, mark + 7);
    else
        snprintf(buf, size, "%s", ck_path);
}

int sl_cli_metrics_line(const char *path, bool append, const sl_cli_epoch *r) {
    sl_cli_out o;
    if (sl_cli_out_open(&o, "train", path, append)) return 1;
    fprintf(o.f,
            "{\"epoch\": %d, \"seconds\": %.6f, \"samples_per_s\": %.1f, \"loss\": %.8g, "
            "\"accuracy\": %.6f}\n",
            r->epoch, r->seconds, r->samples_per_s, r->loss, r->accuracy);
    return sl_cli_out_close(&o, "train");
}
