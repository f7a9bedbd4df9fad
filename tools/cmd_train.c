/* SPDX-License-Identifier: Apache-2.0 */
/* sluice train: the seed end to end -- the seed's training and validation pipelines (built in, or
 * given), the iterator over the devices, the MLP trained data-parallel with gradients averaged, and
 * test accuracy after each epoch on one device, as the tutorial prints it. */
#include "cli.h"
#include "common.h"
#include "settings.h"
#include "world.h"

#include "sluice/comm.h"
#include "sluice/dataset.h"
#include "sluice/iterator.h"
#include "sluice/train.h"

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern const char sl_cli_seed_training_sharding[];
extern const char sl_cli_seed_training_devices[];
extern const char sl_cli_seed_validation[];

static const char *usage_text =
    "usage: sluice train [options]   (the seed's defaults: 5 epochs, batch 200, SGD lr 0.001)\n"
    "  --data DIR              holds training/ and testing/ LMDBs (default: data; make data)\n"
    "  --devices D             cpu, cpu:K, all, or GPU ids 0,1 (default: the decorator's\n"
    "                          device_id, else all: every GPU, else cpu)\n"
    "  --mode sharding|devices iterator layout, as the seed's two variants (default sharding)\n"
    "  --order dali|global     dali (default): each device reads its own shard, as DALI;\n"
    "                          global: one order of all records per epoch, the same batches\n"
    "                          and losses on any device count; checkpoints resume on any\n"
    "                          device count with the same --batch-size\n"
    "  --epochs E              (default 5)\n"
    "  --batch-size N          global batch (default: the training pipeline's batch_size, per\n"
    "                          device as in DALI, times the devices; else 200)\n"
    "  --lr LR                 learning rate (default 0.001, the seed's; 0.0003 for adam/adamw)\n"
    "  --optimizer NAME        sgd (default), momentum, adam, adamw\n"
    "  --weight-decay W        (default 0)\n"
    "  --hidden H1,H2,...      hidden layer sizes (default 1024,1024, or a resumed model's); the\n"
    "                          inputs and classes come from the training pipeline's outputs\n"
    "                          (printed as \"model: 784 -> 1024 -> 1024 -> 10 ...\")\n"
    "  --activation tanh|relu  (default tanh)\n"
    "  --math fp32|tf32|bf16   GPU matrix products: float32 (default), TF32 or bfloat16 "
    "tensor-core\n"
    "                          inputs, float32 accumulation (the CPU always computes in float32;\n"
    "                          docs/trainer.md has the accuracy cost)\n"
    "  --seed S                model init (numpy RandomState) and pipeline seed (default 0; the\n"
    "                          pipeline's seed= when its decorator gives one)\n"
    "  --threads N             CPU threads per pipeline (default: the decorator's num_threads,\n"
    "                          else chosen from the machine: the CPUs this process may run on\n"
    "                          over the pipelines of this node's processes, less one, 1..64;\n"
    "                          printed with the devices, and in --json as \"threads\")\n"
    "  --train-pipeline FILE   replace the built-in training pipeline\n"
    "  --val-pipeline FILE     replace the built-in validation pipeline\n"
    "  --pipeline NAME         the function that is the pipeline in those files (default: the\n"
    "                          decorated one, else the only one no other calls)\n"
    "  --arg NAME=VALUE        bind a name in both pipelines (image_size=28, data_path and\n"
    "                          num_classes are bound already, num_classes to the number of\n"
    "                          classes in DIR/training/labels.txt, else 10); a name neither\n"
    "                          pipeline uses is refused\n"
    "  --metrics FILE          one JSON line per epoch\n"
    "  --checkpoint FILE       model + optimiser + iterator, written at each epoch's end\n"
    "                          ({epoch} in FILE: one file per epoch, e.g. ck.{epoch})\n"
    "  --resume FILE           continue from such a checkpoint\n"
    "  --json                  print {\"epochs\": [...]} on stdout at the end\n"
    "  --profile               start-up phases, then the time split per epoch: waiting for data\n"
    "                          (in the iterator), compute\n"
    "                          (trainer steps), and the pipelines' per-stage op seconds\n"
    "A flag wins over the pipeline decorator's setting (and says so on stderr).\n"
    "Under mpirun each process drives its devices (--devices cpu: one CPU replica; all: the GPU "
    "of\n"
    "its local rank), shards are global, rank 0 validates, prints and writes the files.\n";

typedef struct {
    int epoch;
    double seconds, samples_per_s, loss, accuracy;
    /* --profile: seconds in sl_iter_next (waiting for data) and in sl_trainer_step (compute); the
     * training pipelines' op seconds (summed per batch) in the reader, the decoder and the other
     * ops */
    double wait_s, step_s, reader_s, decode_s, ops_s;
    double eval_s; /* validation after the epoch (not in seconds) */
} epoch_result;

/* The training pipelines' stage op seconds so far (each op's time per batch, summed), over devices.
 */
static void stage_seconds(sl_iter *it, double *reader_s, double *decode_s, double *ops_s) {
    *reader_s = *decode_s = *ops_s = 0;
    for (int d = 0; d < sl_iter_num_devices(it); d++) {
        sl_pipeline_stats s;
        sl_pipeline_get_stats(sl_iter_pipeline(it, d), &s);
        *reader_s += s.reader_s;
        *decode_s += s.decode_s;
        *ops_s += s.cpu_ops_s + s.gpu_s;
    }
}

/* model + optimiser state, for the iterator's checkpoint */
static int pack_state(sl_trainer *t, void **out, size_t *size, sl_err *e) {
    size_t nm = 0, no = 0;
    if (sl_mlp_serialize(sl_trainer_model(t, 0), NULL, 0, &nm, e) ||
        sl_optim_serialize(sl_trainer_optim(t, 0), NULL, 0, &no, e))
        return -1;
    unsigned char *buf = malloc(16 + nm + no);
    if (!buf) return -1;
    uint64_t a = nm, b = no;
    memcpy(buf, &a, 8);
    memcpy(buf + 8, &b, 8);
    if (sl_mlp_serialize(sl_trainer_model(t, 0), buf + 16, nm, &nm, e) ||
        sl_optim_serialize(sl_trainer_optim(t, 0), buf + 16 + nm, no, &no, e)) {
        free(buf);
        return -1;
    }
    *out = buf;
    *size = 16 + nm + no;
    return 0;
}

static int unpack_state(sl_trainer *t, const void *buf, size_t size, sl_err *e) {
    uint64_t nm, no;
    if (size < 16) return sl_err_set(e, SL_EFORMAT, "checkpoint: no model state"), -1;
    memcpy(&nm, buf, 8);
    memcpy(&no, (const char *)buf + 8, 8);
    if (nm > size - 16 || no != size - 16 - nm) /* not 16 + nm + no: that can wrap around */
        return sl_err_set(e, SL_EFORMAT, "checkpoint: bad model state lengths"), -1;
    const char *p = (const char *)buf + 16;
    if (sl_mlp_deserialize(sl_trainer_model(t, 0), p, (size_t)nm, e) ||
        sl_optim_deserialize(sl_trainer_optim(t, 0), p + nm, (size_t)no, e) ||
        sl_trainer_sync(t, e))
        return -1;
    return 0;
}

/* The hidden layer sizes into m->sizes[1..]; sizes[0] and the last (inputs, classes) are set
 * from the training pipeline's outputs. */
static int parse_hidden(const char *s, sl_mlp_config *m) {
    m->nsizes = 1;
    while (*s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 1 || v > INT_MAX || m->nsizes >= SL_MLP_MAX_SIZES - 1) return -1;
        m->sizes[m->nsizes++] = (int)v;
        s = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') return -1;
    }
    m->nsizes++; /* the classes */
    return 0;
}

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

static void sizes_line(const sl_mlp_config *m, char *buf, size_t size) {
    size_t n = 0;
    for (int i = 0; i < m->nsizes && n < size; i++)
        n += (size_t)snprintf(buf + n, size - n, "%s%d", i ? " -> " : "", m->sizes[i]);
}

/* The model's view of device k's images: (B, inputs), no copy (outputs are dense). */
static sl_status flat_images(const sl_tensor *x, int64_t inputs, sl_tensor *out, sl_err *e) {
    if (x->ndim == 2) {
        *out = *x;
        return SL_OK;
    }
    const int64_t shape[2] = {x->shape[0], inputs};
    return sl_tensor_reshape(x, 2, shape, out, e);
}

/* Class ids made one-hot for the trainer, on its replica's device (the images'), in a ring of
 * buffers per device (a queued step still reads the previous ones). */
#define ONEHOT_RING 4
typedef struct onehot {
    int64_t classes;
    int next;
    sl_tensor host[SL_MAX_DEVICES], dev[SL_MAX_DEVICES][ONEHOT_RING];
    int32_t *ids;
} onehot;

static void onehot_free(onehot *oh) {
    for (int k = 0; k < SL_MAX_DEVICES; k++) {
        sl_tensor_free(&oh->host[k]);
        for (int r = 0; r < ONEHOT_RING; r++) sl_tensor_free(&oh->dev[k][r]);
    }
    free(oh->ids);
}

static sl_status onehot_make(onehot *oh, const sl_iter_batch *b, int k, const sl_tensor *y,
                             sl_device dev, sl_tensor *out, sl_err *e) {
    int64_t rows = y->shape[0], C = oh->classes;
    const int64_t shape[2] = {rows, C};
    sl_tensor *h = &oh->host[k], *d = &oh->dev[k][oh->next];
    if (!h->data || h->shape[0] != rows) {
        sl_tensor_free(h);
        SL_CLI_TRY(sl_tensor_alloc(h, SL_DTYPE_F32, sl_cpu(), 2, shape, NULL, e));
        free(oh->ids);
        if (!(oh->ids = malloc((size_t)rows * sizeof *oh->ids)))
            return sl_err_set(e, SL_ENOMEM, "out of memory");
    }
    /* the ids, as int32 on the host */
    sl_tensor ids, ids_host;
    const int64_t ishape[1] = {rows};
    SL_CLI_TRY(sl_tensor_reshape(y, 1, ishape, &ids, e));
    SL_CLI_TRY(sl_tensor_wrap(&ids_host, oh->ids, SL_DTYPE_I32, sl_cpu(), 1, ishape, NULL));
    if (ids.dtype == SL_DTYPE_I32) {
        SL_CLI_TRY(sl_tensor_copy(&ids_host, &ids, NULL, e));
    } else { /* another integer type: through the host, value by value */
        sl_tensor tmp;
        SL_CLI_TRY(sl_tensor_alloc(&tmp, ids.dtype, sl_cpu(), 1, ishape, NULL, e));
        sl_status st = sl_tensor_copy(&tmp, &ids, NULL, e);
        for (int64_t i = 0; i < rows && !st; i++) {
            const unsigned char *p = (const unsigned char *)tmp.data + i * sl_dtype_size(ids.dtype);
            int64_t v = 0;
            switch (ids.dtype) {
            case SL_DTYPE_U8:
                v = *p;
                break;
            case SL_DTYPE_I8:
                v = *(const int8_t *)p;
                break;
            case SL_DTYPE_U16:
                v = *(const uint16_t *)p;
                break;
            case SL_DTYPE_I16:
                v = *(const int16_t *)p;
                break;
            case SL_DTYPE_I64:
                v = *(const int64_t *)p;
                break;
            case SL_DTYPE_U32:
                v = *(const uint32_t *)p;
                break;
            case SL_DTYPE_U64:
                v = *(const uint64_t *)p > INT64_MAX ? -1 : (int64_t) * (const uint64_t *)p;
                break;
            default:
                v = -1;
                break;
            }
            oh->ids[i] = v < 0 || v > INT32_MAX ? -1 : (int32_t)v;
        }
        sl_tensor_free(&tmp);
        SL_CLI_TRY(st);
    }
    float *f = h->data;
    memset(f, 0, (size_t)(rows * C) * sizeof *f);
    for (int64_t i = 0; i < rows; i++) {
        int32_t c = oh->ids[i];
        if (c < 0 || c >= C)
            return sl_err_set(e, SL_EINVAL,
                              "record %s: label %d is not a class id in 0..%lld (num_classes=%lld)",
                              sl_iter_key(b, k, (int)i), (int)c, (long long)C - 1, (long long)C);
        f[i * C + c] = 1.0f;
    }
    if (!d->data || d->shape[0] != rows) {
        sl_tensor_free(d);
        SL_CLI_TRY(sl_tensor_alloc(d, SL_DTYPE_F32, dev, 2, shape, NULL, e));
    }
    SL_CLI_TRY(sl_tensor_copy(d, h, NULL, e));
    *out = *d;
    return SL_OK;
}

/* Accuracy of replica 0 over the validation iterator (one device): correct / samples, as
 * model.py. Each sample is scored once: the last batch's padding (the last sample repeated up to
 * the batch size, which the iterator, under PARTIAL, reports by sl_iter_batch_valid) is not.
 * *first: a batch already taken (the one whose shapes were checked), used first, then NULL. */
static int evaluate(sl_mlp *m, sl_iter *val, const sl_iter_batch **first, int64_t inputs,
                    double *accuracy, sl_err *e) {
    int64_t correct = 0, scored = 0;
    const sl_iter_batch *b;
    sl_status st;
    while ((st = *first ? (b = *first, *first = NULL, SL_OK) : sl_iter_next(val, &b)) == SL_OK) {
        sl_tensor x, xf, y;
        int64_t c = 0;
        if (sl_iter_shard(b, 0, 0, &x, e) || flat_images(&x, inputs, &xf, e) ||
            sl_iter_shard(b, 1, 0, &y, e))
            return -1;
        int64_t rows = xf.shape[0], valid = sl_iter_batch_valid(b, 0);
        if (valid > rows) valid = rows;
        if (valid < rows &&
            (sl_tensor_slice(&xf, 0, 0, valid, &xf, e) || sl_tensor_slice(&y, 0, 0, valid, &y, e)))
            return -1;
        if (valid > 0 && sl_mlp_evaluate(m, &xf, &y, &c, NULL, e)) return -1;
        correct += c;
        scored += valid;
    }
    if (st != SL_EOF) return sl_err_set(e, st, "%s", sl_iter_errmsg(val)), -1;
    *accuracy = scored ? (double)correct / (double)scored : 0;
    sl_iter_reset(val);
    return 0;
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
static sl_status model_ends(sl_iter *train, sl_iter *val, const char *tfile, const char *vfile,
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
    uint64_t nm = 0;
    sl_mlp_config saved;
    if (extra && n >= 16 && (memcpy(&nm, extra, 8), nm <= n - 16) &&
        sl_mlp_peek_config((const char *)extra + 16, (size_t)nm, &saved, NULL) == SL_OK) {
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
            sizes_line(&saved, a, sizeof a);
            sizes_line(m, b, sizeof b);
            return sl_err_set(e, SL_EINVAL,
                              "the checkpoint holds a %s model; the pipelines and --hidden make %s "
                              "(inputs: '%s' %s per sample; classes: %s)",
                              a, b, ts.images, tshape, cwhy);
        }
    }
    snprintf(why, nwhy, "inputs: '%s' %s per sample; classes: %s", ts.images, tshape, cwhy);
    return SL_OK;
}

static int train_main(int argc, char **argv, sl_cli_world *w);

/* The checkpoint file of an epoch: {epoch} in the path replaced by its number. */
static void ck_name(const char *ck_path, int epoch, char *buf, size_t size) {
    const char *mark = strstr(ck_path, "{epoch}");
    if (mark)
        snprintf(buf, size, "%.*s%d%s", (int)(mark - ck_path), ck_path, epoch, mark + 7);
    else
        snprintf(buf, size, "%s", ck_path);
}

/* Adds an epoch's line to the metrics file: the file is written again whole beside it (its lines
 * so far, then this one) and renamed over it, so that it never holds half a line. append: keep
 * the lines already there (a resumed run, or after this run's first epoch). */
static int metrics_line(const char *path, bool append, const epoch_result *r) {
    sl_cli_out o;
    if (sl_cli_out_open(&o, "train", path, append)) return 1;
    fprintf(o.f,
            "{\"epoch\": %d, \"seconds\": %.6f, \"samples_per_s\": %.1f, \"loss\": %.8g, "
            "\"accuracy\": %.6f}\n",
            r->epoch, r->seconds, r->samples_per_s, r->loss, r->accuracy);
    return sl_cli_out_close(&o, "train");
}

/* Seconds since the process started (Linux: /proc, 10 ms steps), or -1: what the start-up
 * profile cannot see from inside (loading the libraries, the CUDA driver's initialisation). */
static double process_age(void) {
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

/* The NCCL group of this process's GPUs (under mpirun: of every process's GPUs, over MPI), made on
 * a thread of its own from the start: its set-up (~0.5 s for 2 GPUs) then overlaps the GPU
 * contexts, the pipelines and the models. */
typedef struct nccl_setup {
    pthread_t thread;
    int started;
    sl_comm_config cc;
    sl_comm *comms[SL_MAX_DEVICES];
    sl_status st;
    sl_err err;
} nccl_setup;

static void *nccl_setup_run(void *arg) {
    nccl_setup *ns = arg;
    ns->st = sl_comm_create(&ns->cc, ns->comms, SL_MAX_DEVICES, NULL, &ns->err);
    if (ns->st) sl_err_prefix(&ns->err, "NCCL group of %d GPUs: ", ns->cc.size);
    return NULL;
}

static void nccl_setup_start(nccl_setup *ns, const sl_device *devices, int n,
                             const void *mpi_comm) {
    memset(ns, 0, sizeof *ns);
    ns->cc.kind = SL_COMM_NCCL;
    ns->cc.size = n;
    ns->cc.devices = devices;
    ns->cc.mpi_comm = mpi_comm;
    ns->started = pthread_create(&ns->thread, NULL, nccl_setup_run, ns) == 0;
}

/* While NCCL sets up, the GPUs are idle: one forward/backward of a throwaway model like the real
 * one (same sizes, math and batch), a thread per GPU, loads the kernels of cuBLAS and sluice that
 * the first training step would otherwise load (lazily, ~0.1 s). Best effort: an error here
 * shows up again, and is reported, when the real model is made. */
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

static void warm_gpus(const sl_mlp_config *mc, const sl_device *devs, int n, int rows) {
    warm_job jobs[SL_MAX_DEVICES];
    for (int k = 0; k < n; k++) {
        jobs[k] = (warm_job){.mc = mc, .dev = devs[k], .rows = rows};
        jobs[k].started = pthread_create(&jobs[k].thread, NULL, warm_run, &jobs[k]) == 0;
    }
    for (int k = 0; k < n; k++)
        if (jobs[k].started) pthread_join(jobs[k].thread, NULL);
}

/* Joins the set-up; its comms then belong to the caller (SL_OK) or are none. */
static sl_status nccl_setup_join(nccl_setup *ns, sl_err *err) {
    if (!ns->started) return SL_OK;
    pthread_join(ns->thread, NULL);
    ns->started = 0;
    return ns->st ? sl_err_copy(err, &ns->err) : SL_OK;
}

/* A failure at run time: printed (with the rank under mpirun), and every rank stops. */
static int wfail(const sl_cli_world *w, const char *fmt, ...) SL_PRINTF(2, 3);
static int wfail(const sl_cli_world *w, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return sl_cli_world_fail(w, "train", msg);
}

int sl_cli_train(int argc, char **argv) {
    sl_cli_world w;
    if (sl_cli_world_init(&w, &argc, &argv)) return 1;
    int rc = train_main(argc, argv, &w);
    sl_cli_world_finalize(&w);
    return rc;
}

static int train_main(int argc, char **argv, sl_cli_world *w) {
    const char *data = "data", *devices = "all", *mode = "sharding", *train_path = NULL,
               *val_path = NULL, *metrics_path = NULL, *ck_path = NULL, *resume = NULL,
               *pipeline_fn = NULL;
    int epochs = 5, batch = 200, threads = 0, json = 0, lr_given = 0, profile = 0;
    int global_order = 0;
    bool hidden_given = false;
    const char *data_given = NULL;
    sl_cli_flags flags = {0}; /* the settings a pipeline's decorator may also give, as typed */
    unsigned long long seed = 0;
    long long opt_n;
    double opt_x;
    sl_trainer_config tc;
    sl_trainer_config_default(&tc);
    sl_pipeline_bind user_binds[32];
    int nuser = 0;
    sl_err e;
    sl_err_clear(&e);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage_text, stdout);
            return 0;
        }
        if (!strcmp(a, "--json")) {
            json = 1;
            continue;
        }
        if (!strcmp(a, "--profile")) {
            profile = 1;
            continue;
        }
        if (a[0] != '-' || !v)
            return sl_cli_fail("train", "%s: %s (see sluice train --help)", a,
                               a[0] == '-' ? "needs a value" : "unexpected argument"),
                   2;
        i++;
        if (!strcmp(a, "--data"))
            data = data_given = v;
        else if (!strcmp(a, "--devices"))
            devices = flags.devices = v;
        else if (!strcmp(a, "--mode"))
            mode = v;
        else if (!strcmp(a, "--order")) {
            if (strcmp(v, "dali") && strcmp(v, "global"))
                return sl_cli_fail("train", "--order dali or global, not '%s'", v), 2;
            global_order = !strcmp(v, "global");
        } else if (!strcmp(a, "--epochs")) {
            if (sl_cli_opt_int("train", a, v, 1, INT_MAX, &opt_n)) return 2;
            epochs = (int)opt_n;
        } else if (!strcmp(a, "--batch-size")) {
            if (sl_cli_opt_int("train", a, v, 1, INT_MAX, &opt_n)) return 2;
            batch = (int)opt_n;
            flags.batch_size = v;
        } else if (!strcmp(a, "--threads")) {
            if (sl_cli_opt_int("train", a, v, 0, 1024, &opt_n)) return 2;
            threads = (int)opt_n;
            flags.threads = v;
        } else if (!strcmp(a, "--lr")) {
            if (sl_cli_opt_float("train", a, v, 0, DBL_MAX, &opt_x)) return 2;
            tc.optim.lr = (float)opt_x;
            lr_given = 1;
        } else if (!strcmp(a, "--weight-decay")) {
            if (sl_cli_opt_float("train", a, v, 0, DBL_MAX, &opt_x)) return 2;
            tc.optim.weight_decay = (float)opt_x;
        } else if (!strcmp(a, "--seed")) {
            if (sl_cli_opt_u64("train", a, v, &seed)) return 2;
            flags.seed = v;
        } else if (!strcmp(a, "--train-pipeline"))
            train_path = v;
        else if (!strcmp(a, "--val-pipeline"))
            val_path = v;
        else if (!strcmp(a, "--pipeline"))
            pipeline_fn = v;
        else if (!strcmp(a, "--metrics"))
            metrics_path = v;
        else if (!strcmp(a, "--checkpoint"))
            ck_path = v;
        else if (!strcmp(a, "--resume"))
            resume = v;
        else if (!strcmp(a, "--optimizer")) {
            if (sl_optim_parse_kind(v, &tc.optim, &e)) return sl_cli_fail("train", "%s", e.msg), 2;
        } else if (!strcmp(a, "--math")) {
            if (sl_math_parse(v, &tc.model.math, &e)) return sl_cli_fail("train", "%s", e.msg), 2;
        } else if (!strcmp(a, "--activation")) {
            if (!strcmp(v, "tanh"))
                tc.model.activation = SL_ACT_TANH;
            else if (!strcmp(v, "relu"))
                tc.model.activation = SL_ACT_RELU;
            else
                return sl_cli_fail("train", "--activation tanh or relu, not '%s'", v), 2;
        } else if (!strcmp(a, "--hidden")) {
            if (parse_hidden(v, &tc.model))
                return sl_cli_fail("train", "--hidden wants sizes like 1024,1024, not '%s'", v), 2;
            hidden_given = true;
        } else if (!strcmp(a, "--arg")) {
            if (nuser == 32 || sl_cli_parse_bind(argv[i], &user_binds[nuser]))
                return sl_cli_fail("train", "--arg wants NAME=VALUE, got '%s'", v), 2;
            nuser++;
        } else {
            return sl_cli_fail("train", "unknown option %s (see sluice train --help)", a), 2;
        }
    }
    if (strcmp(mode, "sharding") && strcmp(mode, "devices"))
        return sl_cli_fail("train", "--mode sharding or devices, not '%s'", mode), 2;
    /* the files rank 0 writes can be made: found now, not after an epoch */
    if (w->rank == 0) {
        if (metrics_path && sl_cli_probe("train", "--metrics", metrics_path, true)) return 1;
        if (ck_path) {
            char ck_file[4096];
            ck_name(ck_path, 0, ck_file, sizeof ck_file);
            if (sl_cli_probe("train", "--checkpoint", ck_file, false)) return 1;
        }
    }
    tc.model.seed = (uint32_t)seed;
    /* Adam's steps do not scale with the gradient: the seed's 0.001 overshoots on this saturating
     * tanh net (0.86 after 5 epochs on Fashion-MNIST, 0.875 with 3e-4) */
    if (!lr_given && (tc.optim.kind == SL_OPTIM_ADAM || tc.optim.kind == SL_OPTIM_ADAMW))
        tc.optim.lr = 3e-4f;

    /* pipelines */
    if (pipeline_fn && !train_path && !val_path)
        return sl_cli_fail("train",
                           "--pipeline %s names a function of a pipeline file; give "
                           "--train-pipeline or --val-pipeline",
                           pipeline_fn),
               2;
    char *train_text = NULL, *val_text = NULL;
    if (train_path && !(train_text = sl_cli_read_pipeline("train", train_path))) return 1;
    if (val_path && !(val_text = sl_cli_read_pipeline("train", val_path))) {
        free(train_text);
        return 1;
    }
    char train_dir[4096], test_dir[4096];
    snprintf(train_dir, sizeof train_dir, "%s/training", data);
    snprintf(test_dir, sizeof test_dir, "%s/testing", data);
    /* num_classes: the store's class map (labels.txt, written by sluice convert --from folder)
     * when there is one, else the seed's 10; --arg num_classes=N wins */
    char **tclasses = NULL, **vclasses = NULL;
    int ntc = sl_dataset_read_classes(train_dir, &tclasses);
    int nvc = sl_dataset_read_classes(test_dir, &vclasses);
    int class_diff = -1; /* the first class the two maps name differently */
    for (int c = 0; ntc && nvc && c < (ntc > nvc ? ntc : nvc) && class_diff < 0; c++)
        if (c >= ntc || c >= nvc || strcmp(tclasses[c], vclasses[c])) class_diff = c;
    if (class_diff >= 0) {
        sl_cli_fail("train",
                    "%s/labels.txt and %s/labels.txt do not name the same classes (label %d: "
                    "'%s' and '%s'): a label would mean one class in training and another in "
                    "validation; convert both folders with the same class sub-folders",
                    train_dir, test_dir, class_diff, class_diff < ntc ? tclasses[class_diff] : "",
                    class_diff < nvc ? vclasses[class_diff] : "");
        sl_dataset_free_classes(tclasses, ntc);
        sl_dataset_free_classes(vclasses, nvc);
        free(train_text);
        free(val_text);
        return 1;
    }
    char nclasses[16], classes_from[4200] = "";
    snprintf(nclasses, sizeof nclasses, "%d", ntc ? ntc : nvc ? nvc : 10);
    if (ntc || nvc)
        snprintf(classes_from, sizeof classes_from, "%s/labels.txt", ntc ? train_dir : test_dir);
    sl_dataset_free_classes(tclasses, ntc);
    sl_dataset_free_classes(vclasses, nvc);
    const char *user_classes = NULL; /* --arg num_classes=N */
    for (int i = 0; i < nuser; i++)
        if (!strcmp(user_binds[i].name, "num_classes")) user_classes = user_binds[i].value;
    sl_pipeline_bind binds[40];
    int nb = 0;
    binds[nb++] = (sl_pipeline_bind){"image_size", "28"};
    binds[nb++] = (sl_pipeline_bind){"num_classes", nclasses};
    binds[nb++] = (sl_pipeline_bind){"sharding", "sharding"};
    int data_at = nb;
    binds[nb++] = (sl_pipeline_bind){"data_path", train_dir};
    for (int i = 0; i < nuser; i++) binds[nb++] = user_binds[i]; /* later binds win */

    sl_iter_config ic;
    sl_iter_config_init(&ic);
    ic.text = train_text                 ? train_text
              : !strcmp(mode, "devices") ? sl_cli_seed_training_devices
                                         : sl_cli_seed_training_sharding;
    ic.filename = train_path ? train_path : "seed training pipeline";
    ic.function = train_path ? pipeline_fn : NULL;
    ic.binds = binds;
    ic.nbinds = nb;
    ic.batch_size = batch;
    ic.num_threads = threads;
    ic.seed = seed;
    ic.layout = !strcmp(mode, "devices") ? SL_LAYOUT_STACKED : SL_LAYOUT_SHARDED;
    ic.global_order = global_order;
    ic.resume = resume;
    bool lead = w->rank == 0;
    /* the decorators' settings, and --arg names the pipelines use (num_classes: the tool uses it
     * too, for class-id labels, and checks it against one-hot ones) */
    const char *val_src = val_text ? val_text : sl_cli_seed_validation;
    const char *val_name = val_path ? val_path : "seed validation pipeline";
    sl_pipeline_decorator tdeco, vdeco;
    {
        const char *texts[2] = {ic.text, val_src}, *names[2] = {ic.filename, val_name};
        sl_pipeline_bind check[32];
        int ncheck = 0;
        for (int i = 0; i < nuser; i++)
            if (strcmp(user_binds[i].name, "num_classes")) check[ncheck++] = user_binds[i];
        if (sl_pipeline_text_function_decorator(ic.text, ic.filename, ic.function, &tdeco, &e) ||
            sl_pipeline_text_function_decorator(val_src, val_name, val_path ? pipeline_fn : NULL,
                                                &vdeco, &e) ||
            sl_cli_check_binds(texts, names, 2, check, ncheck, &e)) {
            free(train_text);
            free(val_text);
            return sl_cli_world_fail(w, "train", e.msg);
        }
        /* --data gives data_path (unless --arg data_path overrides it) and the class map */
        bool arg_path = false;
        for (int i = 0; i < nuser; i++)
            if (!strcmp(user_binds[i].name, "data_path")) arg_path = true;
        bool reaches = !arg_path && (sl_cli_text_uses(ic.text, "data_path") ||
                                     sl_cli_text_uses(val_src, "data_path"));
        if (data_given && !reaches && !classes_from[0]) {
            free(train_text);
            free(val_text);
            return sl_cli_fail("train",
                               "--data %s: %s, and it holds no training/labels.txt or "
                               "testing/labels.txt: --data would be ignored",
                               data_given,
                               arg_path ? "--arg data_path overrides it"
                                        : "neither pipeline uses data_path"),
                   2;
        }
    }
    int rc = 1;
    sl_iter *train = NULL, *val = NULL;
    sl_trainer *tr = NULL;
    bool metrics_written = false; /* this run wrote a line to --metrics */
    epoch_result results[1024];
    int nres = 0;
    onehot oh = {.classes = 0};
    const sl_iter_batch *first = NULL, *vfirst = NULL; /* taken to see the outputs' shapes */
    sl_comm *comms[SL_MAX_DEVICES] = {0};
    int ncomms = 0;
    nccl_setup nccl = {.started = 0};
    bool blas_preloading = false; /* cuBLAS is being loaded on a thread of its own */
    int nccl_own = 0;             /* comms holds the NCCL group made here */
    double t_start = 0;
    void *resume_bytes = NULL;
    if (sl_iter_parse_devices(devices, &ic, &e) ||
        sl_cli_decorator_devices("train", ic.filename, &tdeco, &flags, lead, &ic, &e)) {
        rc = wfail(w, "%s", e.msg);
        goto out;
    }
    if (ic.devices[0].kind == SL_DEVICE_CUDA) { /* overlaps the set-up */
        sl_train_preload();
        blas_preloading = true;
    }
    if (w->size > 1 && ic.devices[0].kind == SL_DEVICE_CUDA && !strcmp(devices, "all") &&
        (flags.devices || tdeco.device_id == -1)) {
        /* one GPU per process: the one of its local rank */
        ic.devices[0] = sl_cuda(w->local_rank % ic.ndevices);
        ic.ndevices = 1;
    }
    ic.shard_offset = w->rank * ic.ndevices;
    ic.total_shards = w->size * ic.ndevices;
    if (sl_cli_decorator_settings("train", ic.filename, &tdeco, &flags, lead, &ic, &e)) {
        rc = wfail(w, "%s", e.msg);
        goto out;
    }
    if (threads == 0 && (flags.threads || tdeco.num_threads <= 0))
        ic.num_threads = sl_cli_world_threads(w, ic.ndevices);
    if (resume) {
        size_t n;
        if (sl_cli_world_load(w, resume, global_order == 1, &resume_bytes, &n, &e)) {
            rc = wfail(w, "%s", e.msg);
            goto out;
        }
        ic.resume = resume; /* names the bytes in messages */
        ic.resume_bytes = resume_bytes;
        ic.resume_size = n;
    }
    t_start = sl_cli_now();
    const double age_at_start = profile ? process_age() : -1;
    double t_ctx = t_start, t_train, t_val, t_trainer, t_nccl = 0, t_warm = 0;
    const void *mpi_comm = sl_cli_world_mpi_comm(w);
    if (ic.devices[0].kind == SL_DEVICE_CUDA && sl_comm_available(SL_COMM_NCCL) &&
        (w->size > 1 ? mpi_comm != NULL : ic.ndevices > 1))
        nccl_setup_start(&nccl, ic.devices, ic.ndevices, w->size > 1 ? mpi_comm : NULL);
    if (ic.devices[0].kind == SL_DEVICE_CUDA) { /* every GPU's context at once */
        int ids[SL_MAX_DEVICES];
        for (int k = 0; k < ic.ndevices; k++) ids[k] = ic.devices[k].id;
        if (sl_cuda_init(ids, ic.ndevices, &e)) {
            rc = wfail(w, "%s", e.msg);
            goto out;
        }
        t_ctx = sl_cli_now();
    }
    if (sl_iter_create(&ic, &train, &e) || sl_cli_check_epoch(train, ic.filename, NULL, &e)) {
        rc = wfail(w, "%s", e.msg);
        goto out;
    }
    t_train = sl_cli_now();
    /* validation: one pipeline on the first device, no sharding */
    sl_pipeline_bind vbinds[40];
    memcpy(vbinds, binds, sizeof vbinds);
    vbinds[data_at].value = test_dir;
    sl_iter_config vc = ic;
    vc.text = val_src;
    vc.filename = val_name;
    vc.function = val_path ? pipeline_fn : NULL;
    vc.binds = vbinds;
    vc.ndevices = 1;
    vc.layout = SL_LAYOUT_NONE;
    vc.global_order = 0; /* validation is not sharded: its order does not matter */
    /* the last batch's padding is marked, not scored (DROP: the samples dropped are not scored) */
    if (vdeco.last_batch_policy != SL_LAST_BATCH_DROP) vc.last_batch_policy = SL_LAST_BATCH_PARTIAL;
    vc.resume = NULL;
    vc.resume_bytes = NULL;
    vc.shard_offset = 0;
    vc.total_shards = 0;
    if (vdeco.device_id != -1) { /* validation runs where replica 0 is: it must say the same */
        sl_iter_config probe = vc;
        if (sl_cli_decorator_devices("train", val_name, &vdeco, &flags, false, &probe, &e)) {
            rc = wfail(w, "%s", e.msg);
            goto out;
        }
        if (probe.devices[0].kind != vc.devices[0].kind ||
            (probe.devices[0].kind == SL_DEVICE_CUDA && probe.devices[0].id != vc.devices[0].id)) {
            rc = wfail(w,
                       "%s: device_id=%d, but validation runs on the first training device (%s "
                       "%d): drop device_id, or give --devices",
                       val_name, vdeco.device_id,
                       vc.devices[0].kind == SL_DEVICE_CUDA ? "GPU" : "CPU", vc.devices[0].id);
            goto out;
        }
    }
    /* (the flags' overrides are said once for a file that is both pipelines) */
    bool val_say = lead && (!val_path || !train_path || strcmp(val_path, train_path));
    if (sl_cli_decorator_settings("train", val_name, &vdeco, &flags, val_say, &vc, &e)) {
        rc = wfail(w, "%s", e.msg);
        goto out;
    }
    if (lead && (sl_iter_create(&vc, &val, &e) || /* rank 0 validates, as the seed on GPU 0 */
                 sl_cli_check_epoch(val, val_name, NULL, &e))) {
        rc = wfail(w, "%s", e.msg);
        goto out;
    }
    t_val = sl_cli_now();
    int K = sl_iter_num_devices(train), B = sl_iter_device_batch(train);
    /* the model's ends: from the outputs of the first batches */
    char model_from[8192];
    bool class_ids = false;
    if (model_ends(train, val, ic.filename, val_name, user_classes, nclasses, classes_from,
                   resume != NULL, hidden_given, &first, &vfirst, &class_ids, &tc.model, model_from,
                   sizeof model_from, &e)) {
        rc = wfail(w, "%s", e.msg);
        goto out;
    }
    if (class_ids) oh.classes = tc.model.sizes[tc.model.nsizes - 1];
    const int64_t inputs = tc.model.sizes[0];
    tc.replicas = K;
    for (int k = 0; k < K; k++) tc.devices[k] = ic.devices[k];
    if (w->size > 1 && !nccl.started) {
        if (sl_cli_world_comms(w, ic.devices, K, comms, &e)) {
            rc = wfail(w, "%s", e.msg);
            goto out;
        }
        ncomms = K;
        tc.comms = comms;
    } else if (nccl.started) {
        warm_gpus(&tc.model, ic.devices, K, B);
        t_warm = sl_cli_now();
        if (nccl_setup_join(&nccl, &e)) {
            rc = wfail(w, "%s", e.msg);
            goto out;
        }
        t_nccl = sl_cli_now();
        memcpy(comms, nccl.comms, sizeof comms);
        ncomms = nccl.cc.size;
        nccl_own = 1;
        if (ncomms == K) {
            tc.comms = comms;
        } else if (w->size > 1) { /* the trainer's own group would leave the other ranks out */
            rc = wfail(w, "an NCCL group of %d GPUs for %d replicas", ncomms, K);
            goto out;
        } /* else the trainer makes its own */
    }
    if (sl_trainer_create(&tc, &tr, &e)) {
        rc = wfail(w, "%s", e.msg);
        goto out;
    }
    t_trainer = sl_cli_now();
    const int pipelined = ic.prefetch_cpu >= 2;
    if (profile && lead) {
        bool gpu = ic.devices[0].kind == SL_DEVICE_CUDA;
        fprintf(stderr,
                "startup: %.2f s from the process's start (libraries, device discovery), then ",
                age_at_start);
        if (gpu) fprintf(stderr, "GPU contexts %.3f s, ", t_ctx - t_start);
        fprintf(stderr, "training pipelines %.3f s, validation pipeline %.3f s, trainer %.3f s%s\n",
                t_train - t_ctx, t_val - t_train, t_trainer - t_val,
                !gpu                   ? ""
                : t_nccl > 0           ? " (cuBLAS, waiting for NCCL)"
                : K > 1 || w->size > 1 ? " (cuBLAS, NCCL)"
                                       : " (cuBLAS)");
        if (t_nccl > 0)
            fprintf(stderr,
                    "startup: NCCL's set-up, begun at the start on its own thread, was ready "
                    "%.3f s after the start; the GPUs' warm-up meanwhile took %.3f s\n",
                    t_nccl - t_start, t_warm - t_val);
    }
    if (resume) {
        size_t n;
        const void *extra = sl_iter_resumed_extra(train, &n);
        if (!extra || unpack_state(tr, extra, n, &e)) {
            rc = wfail(w, "%s: %s", resume,
                       extra ? e.msg : "no model in this checkpoint (written by sluice run?)");
            goto out;
        }
    }
    if (!json && lead)
        printf("Training on %d %s device(s)%s, %d samples each per step, %d CPU thread(s) per "
               "pipeline; %lld batches per epoch in training, %lld in validation\n",
               K * w->size, ic.devices[0].kind == SL_DEVICE_CUDA ? "GPU" : "CPU",
               w->size > 1 ? " over several processes" : "", B,
               sl_pipeline_num_threads(sl_iter_pipeline(train, 0)), (long long)sl_iter_len(train),
               (long long)sl_iter_len(val));
    char model_line[256];
    sizes_line(&tc.model, model_line, sizeof model_line);
    if (!json && lead) printf("model: %s (%s)\n", model_line, model_from);
    fflush(stdout);
    rc = 0;
    double prev_stages[3] = {0, 0, 0};
    while (sl_iter_epoch(train) < epochs && rc == 0) {
        int epoch = sl_iter_epoch(train);
        double t0 = sl_cli_now(), loss_sum = 0, wait_s = 0, step_s = 0, tw = t0, ts = 0;
        int64_t steps = 0, total = sl_iter_len(train);
        const sl_iter_batch *b;
        sl_status st;
        while ((st = first ? (b = first, first = NULL, SL_OK) : sl_iter_next(train, &b)) == SL_OK) {
            if (profile) wait_s += (ts = sl_cli_now()) - tw;
            sl_tensor x[SL_MAX_DEVICES], y[SL_MAX_DEVICES], shard;
            float loss = NAN;
            for (int k = 0; k < K && rc == 0; k++)
                if (sl_iter_shard(b, 0, k, &shard, &e) || flat_images(&shard, inputs, &x[k], &e) ||
                    sl_iter_shard(b, 1, k, &y[k], &e) ||
                    (oh.classes && onehot_make(&oh, b, k, &y[k], x[k].device, &y[k], &e)))
                    rc = wfail(w, "%s", e.msg);
            oh.next = (oh.next + 1) % ONEHOT_RING;
            /* pipelined: this step is queued, the loss is the previous step's (the batch stays
             * valid for prefetch_cpu >= 2 more sl_iter_next calls, as the trainer needs) */
            if (rc == 0 && (pipelined ? sl_trainer_step_async(tr, x, y, &loss, &e)
                                      : sl_trainer_step(tr, x, y, &loss, &e)))
                /* a CPU replica runs its step within the call: an error is this step's; a GPU
                 * step's comes out of the next call, as its loss does */
                rc = wfail(w, "step %lld: %s",
                           (long long)(pipelined && steps > 0 && x[0].device.kind != SL_DEVICE_CPU
                                           ? steps - 1
                                           : steps),
                           e.msg);
            if (rc) break;
            if (profile) step_s += (tw = sl_cli_now()) - ts;
            if (!pipelined || steps > 0) loss_sum += loss; /* none yet at an epoch's first */
            steps++;
            if (!json && lead) {
                char label[32];
                snprintf(label, sizeof label, "Epoch %d", epoch);
                sl_cli_progress(label, steps, total);
            }
        }
        if (rc) break;
        if (st != SL_EOF) {
            rc = wfail(w, "%s", sl_iter_errmsg(train));
            break;
        }
        float last = NAN;
        if (sl_trainer_wait(tr, &last, &e)) {
            rc = wfail(w, "step %lld: %s", (long long)steps - 1, e.msg);
            break;
        }
        if (pipelined && steps > 0) loss_sum += last;
        double secs = sl_cli_now() - t0;
        epoch_result r = {epoch,
                          secs,
                          (double)steps * K * w->size * B / (secs > 0 ? secs : 1e-9),
                          steps ? loss_sum / (double)steps : NAN,
                          0,
                          wait_s,
                          step_s,
                          0,
                          0,
                          0,
                          0};
        if (profile) {
            double rd, dec, ops;
            stage_seconds(train, &rd, &dec, &ops);
            r.reader_s = rd - prev_stages[0];
            r.decode_s = dec - prev_stages[1];
            r.ops_s = ops - prev_stages[2];
            prev_stages[0] = rd, prev_stages[1] = dec, prev_stages[2] = ops;
        }
        double t_eval = sl_cli_now();
        if (lead && evaluate(sl_trainer_model(tr, 0), val, &vfirst, inputs, &r.accuracy, &e)) {
            rc = wfail(w, "validation: %s", e.msg);
            break;
        }
        r.eval_s = sl_cli_now() - t_eval;
        sl_iter_reset(train);
        if (nres < 1024) results[nres++] = r;
        if (!json && lead) {
            printf("Epoch %d: %.2f s, %.0f samples/s\n", epoch, r.seconds, r.samples_per_s);
            printf("Test set accuracy %.4f\n", r.accuracy);
            if (profile)
                printf("Profile: %.2f s waiting for data, %.2f s in training steps, %.2f s other; "
                       "pipeline op seconds: reader %.2f, decode %.2f, other ops %.2f; "
                       "validation %.3f s\n",
                       r.wait_s, r.step_s, r.seconds - r.wait_s - r.step_s, r.reader_s, r.decode_s,
                       r.ops_s, r.eval_s);
            fflush(stdout);
        }
        if (lead && metrics_path) {
            if (metrics_line(metrics_path, resume || metrics_written, &r)) {
                rc = wfail(w, "--metrics %s: the epoch's line could not be written", metrics_path);
                break;
            }
            metrics_written = true;
        }
        if (ck_path) {
            void *state;
            size_t n;
            if (pack_state(tr, &state, &n, &e)) {
                rc = wfail(w, "checkpoint: %s", e.msg);
                break;
            }
            void *bytes;
            size_t blen;
            sl_status cs = sl_iter_save(train, state, n, &bytes, &blen);
            free(state);
            if (cs) {
                rc = wfail(w, "%s", sl_iter_errmsg(train));
                break;
            }
            char ck_file[4096];
            ck_name(ck_path, epoch, ck_file, sizeof ck_file);
            cs = sl_cli_world_save(w, ck_file, bytes, blen, &e); /* every rank's part, one file */
            free(bytes);
            if (cs) rc = wfail(w, "%s", e.msg);
        }
    }
    if (json && lead) {
        printf("{\"devices\": %d, \"batch_per_device\": %d, \"threads\": %d, \"model\": [",
               K * w->size, B, sl_pipeline_num_threads(sl_iter_pipeline(train, 0)));
        for (int i = 0; i < tc.model.nsizes; i++) printf("%s%d", i ? ", " : "", tc.model.sizes[i]);
        printf("], \"epochs\": [");
        for (int i = 0; i < nres; i++) {
            const epoch_result *r = &results[i];
            printf("%s{\"epoch\": %d, \"seconds\": %.6f, \"samples_per_s\": %.1f, \"loss\": %.8g, "
                   "\"accuracy\": %.6f",
                   i ? ", " : "", r->epoch, r->seconds, r->samples_per_s, r->loss, r->accuracy);
            if (profile)
                printf(", \"wait_s\": %.6f, \"step_s\": %.6f, \"reader_s\": %.6f, "
                       "\"decode_s\": %.6f, \"ops_s\": %.6f, \"eval_s\": %.6f",
                       r->wait_s, r->step_s, r->reader_s, r->decode_s, r->ops_s, r->eval_s);
            printf("}");
        }
        printf("]}\n");
    }
out:
    if (nccl.started && nccl_setup_join(&nccl, &e) == SL_OK) {
        memcpy(comms, nccl.comms, sizeof comms); /* a failure before they were taken */
        ncomms = nccl.cc.size;
    }
    double t_end = sl_cli_now();
    sl_trainer_free(tr);
    double t_tr = sl_cli_now();
    /* After a run that went well the process ends here (under mpirun after MPI_Finalize, which
     * NCCL's group does not use once made): tearing the group down would take ~0.45 s
     * (ncclCommDestroy waits on its threads; ncclCommAbort takes as long), and the end of the
     * process frees the same. After a failure it is torn down properly. */
    if (!(nccl_own && rc == 0))
        for (int k = 0; k < ncomms; k++) sl_comm_free(comms[k]);
    double t_comm = sl_cli_now();
    free(resume_bytes);
    onehot_free(&oh);
    sl_iter_free(val);
    sl_iter_free(train);
    if (profile && lead && t_start > 0)
        fprintf(stderr,
                "teardown: trainer %.3f s, comms %.3f s, pipelines %.3f s; %.2f s since the "
                "process started\n",
                t_tr - t_end, t_comm - t_tr, sl_cli_now() - t_comm, process_age());
    free(train_text);
    free(val_text);
    /* an early failure must not end the process while cuBLAS's initialisers still run on the
     * preload thread: wait for the load (done long since after any training step) */
    if (blas_preloading) (void)sl_train_preload_wait(NULL);
    return rc;
}
