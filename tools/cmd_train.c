/* SPDX-License-Identifier: Apache-2.0 */
/* sluice train: the seed end to end -- the seed's training and validation pipelines (built in, or
 * given), the iterator over the devices, the MLP trained data-parallel with gradients averaged, and
 * test accuracy after each epoch on one device, as the tutorial prints it. The command runs in
 * phases: the options (the flags shared with `sluice run` from options.c, and train's own), the
 * files it writes and reads, the class maps and names bound, the decorators' settings (resolved
 * by the library), the pipelines, the model and trainer, the epochs, the report. */
#include "cli.h"
#include "common.h"
#include "options.h"
#include "settings.h"
#include "train_parts.h"
#include "world.h"

#include "sluice/checkpoint.h"
#include "sluice/comm.h"
#include "sluice/dataset.h"
#include "sluice/evaluate.h"
#include "sluice/iterator.h"
#include "sluice/train.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* What `sluice train` was asked to do besides the shared flags (options.h). */
typedef struct train_opts {
    const char *data, *data_given, *mode, *train_path, *val_path, *metrics_path;
    const char *lr_typed; /* --lr as typed, NULL when not given */
    int profile;
    bool hidden_given;
    sl_trainer_config tc; /* the model (--hidden, --activation, --math) and --optimizer, --lr */
} train_opts;

/* ---- the options: the shared ones (options.c) and these -------------------------------------- */

static int take_data(sl_cli_opts *com, void *own, const char *cmd, char *v) {
    (void)com, (void)cmd;
    train_opts *o = own;
    o->data = o->data_given = v;
    return 0;
}

static int take_optimizer(sl_cli_opts *com, void *own, const char *cmd, char *v) {
    (void)com;
    sl_err e;
    if (sl_optim_parse_kind(v, &((train_opts *)own)->tc.optim, &e))
        return sl_cli_fail(cmd, "%s", e.msg), 2;
    return 0;
}

static int take_math(sl_cli_opts *com, void *own, const char *cmd, char *v) {
    (void)com;
    sl_err e;
    if (sl_math_parse(v, &((train_opts *)own)->tc.model.math, &e))
        return sl_cli_fail(cmd, "%s", e.msg), 2;
    return 0;
}

static int take_activation(sl_cli_opts *com, void *own, const char *cmd, char *v) {
    (void)com;
    train_opts *o = own;
    if (!strcmp(v, "tanh"))
        o->tc.model.activation = SL_ACT_TANH;
    else if (!strcmp(v, "relu"))
        o->tc.model.activation = SL_ACT_RELU;
    else
        return sl_cli_fail(cmd, "--activation tanh or relu, not '%s'", v), 2;
    return 0;
}

/* The hidden layer sizes into m->sizes[1..]; sizes[0] and the last (inputs, classes) are set
 * from the training pipeline's outputs. */
static int take_hidden(sl_cli_opts *com, void *own, const char *cmd, char *v) {
    (void)com;
    train_opts *o = own;
    sl_mlp_config *m = &o->tc.model;
    m->nsizes = 1;
    for (const char *s = v; *s;) {
        char *end;
        long n = strtol(s, &end, 10);
        if (end == s || n < 1 || n > INT_MAX || m->nsizes >= SL_MLP_MAX_SIZES - 1 ||
            (*end && *end != ','))
            return sl_cli_fail(cmd, "--hidden wants sizes like 1024,1024, not '%s'", v), 2;
        m->sizes[m->nsizes++] = (int)n;
        s = *end == ',' ? end + 1 : end;
    }
    m->nsizes++; /* the classes */
    o->hidden_given = true;
    return 0;
}

#define AT(field) offsetof(train_opts, field)
static const sl_cli_option train_options[] = {
    {"--data", SL_CLI_SPECIAL, 0, 0, 0, 0, take_data},
    {"--mode", SL_CLI_STR, AT(mode), 0, 0, 0, NULL},
    {"--lr", SL_CLI_FLOAT, AT(tc.optim.lr), 0, 0, AT(lr_typed), NULL},
    {"--weight-decay", SL_CLI_FLOAT, AT(tc.optim.weight_decay), 0, 0, 0, NULL},
    {"--optimizer", SL_CLI_SPECIAL, 0, 0, 0, 0, take_optimizer},
    {"--math", SL_CLI_SPECIAL, 0, 0, 0, 0, take_math},
    {"--activation", SL_CLI_SPECIAL, 0, 0, 0, 0, take_activation},
    {"--hidden", SL_CLI_SPECIAL, 0, 0, 0, 0, take_hidden},
    {"--train-pipeline", SL_CLI_STR, AT(train_path), 0, 0, 0, NULL},
    {"--val-pipeline", SL_CLI_STR, AT(val_path), 0, 0, 0, NULL},
    {"--metrics", SL_CLI_STR, AT(metrics_path), 0, 0, 0, NULL},
    {"--profile", SL_CLI_FLAG, AT(profile), 0, 0, 0, NULL},
};
#undef AT

/* Reads the command line; -1 to go on, else the exit status (--help: 0). */
static int parse_options(int argc, char **argv, sl_cli_opts *com, train_opts *o) {
    sl_cli_opts_init(com);
    com->epochs = 5;
    com->set.default_devices = "all";
    memset(o, 0, sizeof *o);
    o->data = "data";
    o->mode = "sharding";
    sl_trainer_config_default(&o->tc);
    const sl_cli_command cmd = {"train", usage_text, train_options,
                                sizeof train_options / sizeof train_options[0], false};
    const char *none = NULL;
    int rc = sl_cli_parse_options(&cmd, argc, argv, com, o, &none);
    if (rc >= 0) return rc;
    if (strcmp(o->mode, "sharding") && strcmp(o->mode, "devices"))
        return sl_cli_fail("train", "--mode sharding or devices, not '%s'", o->mode), 2;
    return -1;
}

/* ---- a training run -------------------------------------------------------------------------- */

/* Everything a run holds, phase by phase; freed by finish(). */
typedef struct train_run {
    const sl_cli_opts *com;
    train_opts *o;
    const sl_cli_world *w;
    bool lead;
    char *train_text, *val_text;
    const char *val_src, *val_name;
    char train_dir[4096], test_dir[4096];
    char nclasses[16], classes_from[4200]; /* the class map's count, and its file ("": none) */
    const char *user_classes;              /* --arg num_classes=N */
    sl_pipeline_bind binds[4 + SL_CLI_MAX_BINDS];  /* the training pipelines' */
    sl_pipeline_bind vbinds[4 + SL_CLI_MAX_BINDS]; /* the validation pipeline's */
    int nbinds, data_at;
    sl_pipeline_decorator tdeco, vdeco;
    sl_iter_config ic, vc;
    void *resume_bytes;
    sl_iter *train, *val;
    const sl_iter_batch *first, *vfirst; /* taken to see the outputs' shapes */
    sl_trainer *tr;
    sl_onehot *oh; /* class-id labels made one-hot; NULL for one-hot labels */
    sl_comm *comms[SL_MAX_DEVICES];
    int ncomms, nccl_own; /* nccl_own: comms holds the NCCL group made here */
    sl_cli_nccl nccl;
    bool blas_preloading; /* cuBLAS is being loaded on a thread of its own */
    int K, B;
    int64_t inputs;
    char model_from[8192];
    /* the start-up's clock (--profile) */
    double t_start, age_at_start, t_ctx, t_train, t_val, t_trainer, t_nccl, t_warm;
    sl_cli_epoch results[1024];
    int nres;
    bool metrics_written; /* this run wrote a line to --metrics */
    double prev_stages[3];
    sl_err e;
} train_run;

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

/* The files rank 0 writes can be made (found now, not after an epoch); the model's seed and the
 * learning rate's default; --pipeline only with a file. 0, or the exit status. */
static int check_args(train_run *t) {
    const train_opts *o = t->o;
    if (t->lead) {
        if (o->metrics_path && sl_cli_probe("train", "--metrics", o->metrics_path, true)) return 1;
        if (t->com->ck_path) {
            char ck_file[4096];
            sl_cli_ck_name(t->com->ck_path, 0, ck_file, sizeof ck_file);
            if (sl_cli_probe("train", "--checkpoint", ck_file, false)) return 1;
        }
    }
    t->o->tc.model.seed = (uint32_t)t->com->set.seed;
    /* Adam's steps do not scale with the gradient: the seed's 0.001 overshoots on this saturating
     * tanh net (0.86 after 5 epochs on Fashion-MNIST, 0.875 with 3e-4) */
    sl_optim_kind kind = o->tc.optim.kind;
    if (!o->lr_typed && (kind == SL_OPTIM_ADAM || kind == SL_OPTIM_ADAMW))
        t->o->tc.optim.lr = 3e-4f;
    if (t->com->function && !o->train_path && !o->val_path)
        return sl_cli_fail("train",
                           "--pipeline %s names a function of a pipeline file; give "
                           "--train-pipeline or --val-pipeline",
                           t->com->function),
               2;
    if (o->train_path && !(t->train_text = sl_cli_read_pipeline("train", o->train_path))) return 1;
    if (o->val_path && !(t->val_text = sl_cli_read_pipeline("train", o->val_path))) return 1;
    return 0;
}

/* num_classes: the store's class map (labels.txt, written by sluice convert --from folder) when
 * there is one, else the seed's 10; --arg num_classes=N wins. 0, or the exit status. */
static int class_maps(train_run *t) {
    snprintf(t->train_dir, sizeof t->train_dir, "%s/training", t->o->data);
    snprintf(t->test_dir, sizeof t->test_dir, "%s/testing", t->o->data);
    char **tclasses = NULL, **vclasses = NULL;
    int ntc = sl_dataset_read_classes(t->train_dir, &tclasses);
    int nvc = sl_dataset_read_classes(t->test_dir, &vclasses);
    int diff = -1; /* the first class the two maps name differently */
    for (int c = 0; ntc && nvc && c < (ntc > nvc ? ntc : nvc) && diff < 0; c++)
        if (c >= ntc || c >= nvc || strcmp(tclasses[c], vclasses[c])) diff = c;
    if (diff >= 0)
        sl_cli_fail("train",
                    "%s/labels.txt and %s/labels.txt do not name the same classes (label %d: "
                    "'%s' and '%s'): a label would mean one class in training and another in "
                    "validation; convert both folders with the same class sub-folders",
                    t->train_dir, t->test_dir, diff, diff < ntc ? tclasses[diff] : "",
                    diff < nvc ? vclasses[diff] : "");
    snprintf(t->nclasses, sizeof t->nclasses, "%d", ntc ? ntc : nvc ? nvc : 10);
    if (ntc || nvc)
        snprintf(t->classes_from, sizeof t->classes_from, "%s/labels.txt",
                 ntc ? t->train_dir : t->test_dir);
    sl_dataset_free_classes(tclasses, ntc);
    sl_dataset_free_classes(vclasses, nvc);
    return diff >= 0 ? 1 : 0;
}

/* The names the pipelines get: the seed's (image_size, num_classes, sharding, data_path), then
 * the --arg ones (later binds win). */
static void make_binds(train_run *t) {
    const sl_cli_opts *com = t->com;
    for (int i = 0; i < com->nbinds; i++)
        if (!strcmp(com->binds[i].name, "num_classes")) t->user_classes = com->binds[i].value;
    int nb = 0;
    t->binds[nb++] = (sl_pipeline_bind){"image_size", "28"};
    t->binds[nb++] = (sl_pipeline_bind){"num_classes", t->nclasses};
    t->binds[nb++] = (sl_pipeline_bind){"sharding", "sharding"};
    t->data_at = nb;
    t->binds[nb++] = (sl_pipeline_bind){"data_path", t->train_dir};
    for (int i = 0; i < com->nbinds; i++) t->binds[nb++] = com->binds[i];
    t->nbinds = nb;
}

/* The training iterator's settings as the flags give them, before the decorator's. */
static void training_config(train_run *t) {
    const sl_cli_opts *com = t->com;
    const train_opts *o = t->o;
    bool stacked = !strcmp(o->mode, "devices");
    sl_iter_config *ic = &t->ic;
    sl_iter_config_init(ic);
    ic->text = t->train_text ? t->train_text
               : stacked     ? sl_cli_seed_training_devices
                             : sl_cli_seed_training_sharding;
    ic->filename = o->train_path ? o->train_path : "seed training pipeline";
    ic->function = o->train_path ? com->function : NULL;
    ic->binds = t->binds;
    ic->nbinds = t->nbinds;
    ic->layout = stacked ? SL_LAYOUT_STACKED : SL_LAYOUT_SHARDED;
    ic->global_order = com->global_order;
    ic->resume = com->resume;
    t->val_src = t->val_text ? t->val_text : sl_cli_seed_validation;
    t->val_name = o->val_path ? o->val_path : "seed validation pipeline";
}

/* The decorators' settings, and --arg names the pipelines use (num_classes: the tool uses it
 * too, for class-id labels, and checks it against one-hot ones); --data must reach something.
 * 0, or the exit status. */
static int read_decorators(train_run *t) {
    const sl_cli_opts *com = t->com;
    const sl_iter_config *ic = &t->ic;
    const char *texts[2] = {ic->text, t->val_src}, *names[2] = {ic->filename, t->val_name};
    sl_pipeline_bind check[SL_CLI_MAX_BINDS];
    int ncheck = 0;
    bool arg_path = false;
    for (int i = 0; i < com->nbinds; i++) {
        if (strcmp(com->binds[i].name, "num_classes")) check[ncheck++] = com->binds[i];
        if (!strcmp(com->binds[i].name, "data_path")) arg_path = true;
    }
    const char *vfn = t->o->val_path ? com->function : NULL;
    if (sl_pipeline_text_function_decorator(ic->text, ic->filename, ic->function, &t->tdeco,
                                            &t->e) ||
        sl_pipeline_text_function_decorator(t->val_src, t->val_name, vfn, &t->vdeco, &t->e) ||
        sl_cli_check_binds(texts, names, 2, check, ncheck, &t->e))
        return sl_cli_world_fail(t->w, "train", t->e.msg);
    /* --data gives data_path (unless --arg data_path overrides it) and the class map */
    bool reaches = !arg_path && (sl_cli_text_uses(ic->text, "data_path") ||
                                 sl_cli_text_uses(t->val_src, "data_path"));
    if (t->o->data_given && !reaches && !t->classes_from[0])
        return sl_cli_fail("train",
                           "--data %s: %s, and it holds no training/labels.txt or "
                           "testing/labels.txt: --data would be ignored",
                           t->o->data_given,
                           arg_path ? "--arg data_path overrides it"
                                    : "neither pipeline uses data_path"),
               2;
    return 0;
}

/* The training pipelines' devices, shards, batch, threads and seed (the library's rules, the flags
 * over the decorator), and the checkpoint's part of this process. 0, or the exit status. */
static int settle_training(train_run *t) {
    sl_iter_settings set = t->com->set;
    sl_cli_world_settings(t->w, &set);
    sl_iter_config *ic = &t->ic;
    if (sl_cli_settle_devices("train", &t->tdeco, &t->com->flags, &set, t->lead, ic, &t->e))
        return wfail(t->w, "%s", t->e.msg);
    if (ic->devices[0].kind == SL_DEVICE_CUDA) { /* overlaps the set-up */
        sl_train_preload();
        t->blas_preloading = true;
    }
    if (sl_cli_settle("train", &t->tdeco, &t->com->flags, &set, t->lead, ic, &t->e))
        return wfail(t->w, "%s", t->e.msg);
    if (t->com->resume) {
        size_t n;
        if (sl_cli_world_load(t->w, t->com->resume, t->com->global_order == 1, &t->resume_bytes, &n,
                              &t->e))
            return wfail(t->w, "%s", t->e.msg);
        ic->resume_bytes = t->resume_bytes; /* resume names the bytes in messages */
        ic->resume_size = n;
    }
    return 0;
}

/* The NCCL group's set-up begun on its thread, every GPU's context, and the training iterator.
 * 0, or the exit status. */
static int open_training(train_run *t) {
    const sl_cli_world *w = t->w;
    sl_iter_config *ic = &t->ic;
    t->t_start = sl_cli_now();
    t->age_at_start = t->o->profile ? sl_cli_process_age() : -1;
    t->t_ctx = t->t_start;
    const void *mpi_comm = sl_cli_world_mpi_comm(w);
    bool gpu = ic->devices[0].kind == SL_DEVICE_CUDA;
    if (gpu && sl_comm_available(SL_COMM_NCCL) &&
        (w->size > 1 ? mpi_comm != NULL : ic->ndevices > 1))
        sl_cli_nccl_start(&t->nccl, ic->devices, ic->ndevices, w->size > 1 ? mpi_comm : NULL);
    if (gpu) { /* every GPU's context at once */
        int ids[SL_MAX_DEVICES];
        for (int k = 0; k < ic->ndevices; k++) ids[k] = ic->devices[k].id;
        if (sl_cuda_init(ids, ic->ndevices, &t->e)) return wfail(w, "%s", t->e.msg);
        t->t_ctx = sl_cli_now();
    }
    if (sl_iter_create(ic, &t->train, &t->e) ||
        sl_cli_check_epoch(t->train, ic->filename, NULL, &t->e))
        return wfail(w, "%s", t->e.msg);
    t->t_train = sl_cli_now();
    return 0;
}

/* Validation: one pipeline on the first training device, no sharding, on rank 0 (as the seed on
 * GPU 0). 0, or the exit status. */
static int open_validation(train_run *t) {
    const sl_cli_world *w = t->w;
    sl_iter_config *vc = &t->vc;
    *vc = t->ic;
    memcpy(t->vbinds, t->binds, sizeof t->vbinds);
    t->vbinds[t->data_at].value = t->test_dir;
    vc->binds = t->vbinds;
    vc->text = t->val_src;
    vc->filename = t->val_name;
    vc->function = t->o->val_path ? t->com->function : NULL;
    vc->ndevices = 1;
    vc->layout = SL_LAYOUT_NONE;
    vc->global_order = 0; /* validation is not sharded: its order does not matter */
    /* the last batch's padding is marked, not scored (DROP: the samples dropped are not scored) */
    if (t->vdeco.last_batch_policy != SL_LAST_BATCH_DROP)
        vc->last_batch_policy = SL_LAST_BATCH_PARTIAL;
    vc->resume = NULL;
    vc->resume_bytes = NULL;
    vc->shard_offset = 0;
    vc->total_shards = 0;
    sl_iter_settings set = t->com->set; /* one process's, one device */
    /* --threads 0: the count chosen for the training pipelines, beside which it runs */
    if (set.num_threads == SL_NUM_THREADS_AUTO) set.num_threads = t->ic.num_threads;
    if (t->vdeco.device_id != -1 && !set.devices) { /* it runs where replica 0 is: the same */
        sl_iter_config probe = *vc;
        if (sl_cli_settle_devices("train", &t->vdeco, &t->com->flags, &set, false, &probe, &t->e))
            return wfail(w, "%s", t->e.msg);
        sl_device have = vc->devices[0], want = probe.devices[0];
        if (want.kind != have.kind || (want.kind == SL_DEVICE_CUDA && want.id != have.id))
            return wfail(w,
                         "%s: device_id=%d, but validation runs on the first training device (%s "
                         "%d): drop device_id, or give --devices",
                         t->val_name, t->vdeco.device_id,
                         have.kind == SL_DEVICE_CUDA ? "GPU" : "CPU", have.id);
    }
    /* (the flags' overrides are said once for a file that is both pipelines) */
    const char *tp = t->o->train_path, *vp = t->o->val_path;
    bool val_say = t->lead && (!vp || !tp || strcmp(vp, tp));
    if (sl_cli_settle("train", &t->vdeco, &t->com->flags, &set, val_say, vc, &t->e))
        return wfail(w, "%s", t->e.msg);
    if (t->lead && (sl_iter_create(vc, &t->val, &t->e) ||
                    sl_cli_check_epoch(t->val, t->val_name, NULL, &t->e)))
        return wfail(w, "%s", t->e.msg);
    t->t_val = sl_cli_now();
    return 0;
}

/* The communicators of the replicas: MPI's (or NCCL over MPI) across processes, else the NCCL
 * group begun at the start, joined after the GPUs' warm-up. 0, or the exit status. */
static int make_comms(train_run *t, sl_trainer_config *tc) {
    const sl_cli_world *w = t->w;
    if (w->size > 1 && !t->nccl.started) {
        if (sl_cli_world_comms(w, t->ic.devices, t->K, t->comms, &t->e))
            return wfail(w, "%s", t->e.msg);
        t->ncomms = t->K;
        tc->comms = t->comms;
    } else if (t->nccl.started) {
        sl_cli_warm_gpus(&tc->model, t->ic.devices, t->K, t->B);
        t->t_warm = sl_cli_now();
        if (sl_cli_nccl_join(&t->nccl, &t->e)) return wfail(w, "%s", t->e.msg);
        t->t_nccl = sl_cli_now();
        memcpy(t->comms, t->nccl.comms, sizeof t->comms);
        t->ncomms = t->nccl.cc.size;
        t->nccl_own = 1;
        if (t->ncomms == t->K) {
            tc->comms = t->comms;
        } else if (w->size > 1) { /* the trainer's own group would leave the other ranks out */
            return wfail(w, "an NCCL group of %d GPUs for %d replicas", t->ncomms, t->K);
        } /* else the trainer makes its own */
    }
    return 0;
}

/* The model's ends from the first batches, the one-hot maker for class ids, the communicators
 * and the trainer. 0, or the exit status. */
static int make_trainer(train_run *t) {
    const sl_cli_world *w = t->w;
    sl_trainer_config *tc = &t->o->tc;
    t->K = sl_iter_num_devices(t->train);
    t->B = sl_iter_device_batch(t->train);
    bool class_ids = false;
    if (sl_cli_model_ends(t->train, t->val, t->ic.filename, t->val_name, t->user_classes,
                          t->nclasses, t->classes_from, t->com->resume != NULL, t->o->hidden_given,
                          &t->first, &t->vfirst, &class_ids, &tc->model, t->model_from,
                          sizeof t->model_from, &t->e))
        return wfail(w, "%s", t->e.msg);
    if (class_ids && sl_onehot_create(tc->model.sizes[tc->model.nsizes - 1], &t->oh, &t->e))
        return wfail(w, "%s", t->e.msg);
    t->inputs = tc->model.sizes[0];
    tc->replicas = t->K;
    for (int k = 0; k < t->K; k++) tc->devices[k] = t->ic.devices[k];
    int rc = make_comms(t, tc);
    if (rc) return rc;
    if (sl_trainer_create(tc, &t->tr, &t->e)) return wfail(w, "%s", t->e.msg);
    t->t_trainer = sl_cli_now();
    return 0;
}

/* --profile: where the start-up went. */
static void say_startup(const train_run *t) {
    bool gpu = t->ic.devices[0].kind == SL_DEVICE_CUDA;
    fprintf(stderr, "startup: %.2f s from the process's start (libraries, device discovery), then ",
            t->age_at_start);
    if (gpu) fprintf(stderr, "GPU contexts %.3f s, ", t->t_ctx - t->t_start);
    fprintf(stderr, "training pipelines %.3f s, validation pipeline %.3f s, trainer %.3f s%s\n",
            t->t_train - t->t_ctx, t->t_val - t->t_train, t->t_trainer - t->t_val,
            !gpu                         ? ""
            : t->t_nccl > 0              ? " (cuBLAS, waiting for NCCL)"
            : t->K > 1 || t->w->size > 1 ? " (cuBLAS, NCCL)"
                                         : " (cuBLAS)");
    if (t->t_nccl > 0)
        fprintf(stderr,
                "startup: NCCL's set-up, begun at the start on its own thread, was ready "
                "%.3f s after the start; the GPUs' warm-up meanwhile took %.3f s\n",
                t->t_nccl - t->t_start, t->t_warm - t->t_val);
}

/* The model and optimiser of the checkpoint resumed from, and the header lines. 0, or the exit
 * status. */
static int begin(train_run *t) {
    const sl_cli_world *w = t->w;
    const char *resume = t->com->resume;
    if (t->o->profile && t->lead) say_startup(t);
    if (resume) {
        size_t n;
        const void *extra = sl_iter_resumed_extra(t->train, &n);
        if (!extra || sl_trainer_state_load(t->tr, extra, n, &t->e))
            return wfail(w, "%s: %s", resume,
                         extra ? t->e.msg : "no model in this checkpoint (written by sluice run?)");
    }
    if (!t->com->json && t->lead) {
        printf("Training on %d %s device(s)%s, %d samples each per step, %d CPU thread(s) per "
               "pipeline; %lld batches per epoch in training, %lld in validation\n",
               t->K * w->size, t->ic.devices[0].kind == SL_DEVICE_CUDA ? "GPU" : "CPU",
               w->size > 1 ? " over several processes" : "", t->B,
               sl_pipeline_num_threads(sl_iter_pipeline(t->train, 0)),
               (long long)sl_iter_len(t->train), (long long)sl_iter_len(t->val));
        char model_line[256];
        sl_cli_sizes_line(&t->o->tc.model, model_line, sizeof model_line);
        printf("model: %s (%s)\n", model_line, t->model_from);
    }
    fflush(stdout);
    return 0;
}

/* One step's inputs: each replica's images as (B, inputs), its labels (one-hot where they are
 * class ids). */
static sl_status step_inputs(train_run *t, const sl_iter_batch *b, sl_tensor *x, sl_tensor *y) {
    sl_tensor shard;
    for (int k = 0; k < t->K; k++) {
        SL_CLI_TRY(sl_iter_shard(b, 0, k, &shard, &t->e));
        SL_CLI_TRY(sl_evaluate_flat(&shard, t->inputs, &x[k], &t->e));
        SL_CLI_TRY(sl_iter_shard(b, 1, k, &y[k], &t->e));
        if (t->oh) SL_CLI_TRY(sl_onehot_make(t->oh, b, k, &y[k], x[k].device, &y[k], &t->e));
    }
    if (t->oh) sl_onehot_next(t->oh);
    return SL_OK;
}

/* The training steps of one epoch: r's loss and times. 0, or the exit status. */
static int train_steps(train_run *t, sl_cli_epoch *r) {
    const sl_cli_world *w = t->w;
    const bool pipelined = t->ic.prefetch_cpu >= 2, profile = t->o->profile;
    double t0 = sl_cli_now(), loss_sum = 0, tw = t0, ts = 0;
    int64_t steps = 0, total = sl_iter_len(t->train);
    const sl_iter_batch *b;
    sl_status st;
    while ((st = t->first ? (b = t->first, t->first = NULL, SL_OK) : sl_iter_next(t->train, &b)) ==
           SL_OK) {
        if (profile) r->wait_s += (ts = sl_cli_now()) - tw;
        sl_tensor x[SL_MAX_DEVICES], y[SL_MAX_DEVICES];
        float loss = NAN;
        if (step_inputs(t, b, x, y)) return wfail(w, "%s", t->e.msg);
        /* pipelined: this step is queued, the loss is the previous step's (the batch stays
         * valid for prefetch_cpu >= 2 more sl_iter_next calls, as the trainer needs) */
        if (pipelined ? sl_trainer_step_async(t->tr, x, y, &loss, &t->e)
                      : sl_trainer_step(t->tr, x, y, &loss, &t->e))
            /* a CPU replica runs its step within the call: an error is this step's; a GPU
             * step's comes out of the next call, as its loss does */
            return wfail(w, "step %lld: %s",
                         (long long)(pipelined && steps > 0 && x[0].device.kind != SL_DEVICE_CPU
                                         ? steps - 1
                                         : steps),
                         t->e.msg);
        if (profile) r->step_s += (tw = sl_cli_now()) - ts;
        if (!pipelined || steps > 0) loss_sum += loss; /* none yet at an epoch's first */
        steps++;
        if (!t->com->json && t->lead) {
            char label[32];
            snprintf(label, sizeof label, "Epoch %d", r->epoch);
            sl_cli_progress(label, steps, total);
        }
    }
    if (st != SL_EOF) return wfail(w, "%s", sl_iter_errmsg(t->train));
    float last = NAN;
    if (sl_trainer_wait(t->tr, &last, &t->e))
        return wfail(w, "step %lld: %s", (long long)steps - 1, t->e.msg);
    if (pipelined && steps > 0) loss_sum += last;
    r->seconds = sl_cli_now() - t0;
    r->samples_per_s = (double)steps * t->K * w->size * t->B / (r->seconds > 0 ? r->seconds : 1e-9);
    r->loss = steps ? loss_sum / (double)steps : NAN;
    return 0;
}

/* The training pipelines' stage op seconds in this epoch (each op's time per batch, summed, over
 * the devices). */
static void stage_seconds(train_run *t, sl_cli_epoch *r) {
    double now[3] = {0, 0, 0};
    for (int d = 0; d < sl_iter_num_devices(t->train); d++) {
        sl_pipeline_stats s;
        sl_pipeline_get_stats(sl_iter_pipeline(t->train, d), &s);
        now[0] += s.reader_s;
        now[1] += s.decode_s;
        now[2] += s.cpu_ops_s + s.gpu_s;
    }
    r->reader_s = now[0] - t->prev_stages[0];
    r->decode_s = now[1] - t->prev_stages[1];
    r->ops_s = now[2] - t->prev_stages[2];
    memcpy(t->prev_stages, now, sizeof now);
}

/* The model, optimiser and iterator after the epoch, every rank's part in one file. */
static int save_checkpoint(train_run *t, int epoch) {
    void *state, *bytes;
    size_t n, blen;
    if (sl_trainer_state_save(t->tr, &state, &n, &t->e))
        return wfail(t->w, "checkpoint: %s", t->e.msg);
    sl_status cs = sl_iter_save(t->train, state, n, &bytes, &blen);
    free(state);
    if (cs) return wfail(t->w, "%s", sl_iter_errmsg(t->train));
    char ck_file[4096];
    sl_cli_ck_name(t->com->ck_path, epoch, ck_file, sizeof ck_file);
    cs = sl_cli_world_save(t->w, ck_file, bytes, blen, &t->e);
    free(bytes);
    return cs ? wfail(t->w, "%s", t->e.msg) : 0;
}

/* After an epoch's steps: validation, its lines, the metrics and the checkpoint. 0, or the exit
 * status. */
static int end_epoch(train_run *t, sl_cli_epoch *r) {
    const sl_cli_world *w = t->w;
    if (t->o->profile) stage_seconds(t, r);
    double t_eval = sl_cli_now();
    if (t->lead && sl_evaluate_accuracy(sl_trainer_model(t->tr, 0), t->val, &t->vfirst, t->inputs,
                                        &r->accuracy, &t->e))
        return wfail(w, "validation: %s", t->e.msg);
    r->eval_s = sl_cli_now() - t_eval;
    sl_iter_reset(t->train);
    if (t->nres < 1024) t->results[t->nres++] = *r;
    if (!t->com->json && t->lead) {
        printf("Epoch %d: %.2f s, %.0f samples/s\n", r->epoch, r->seconds, r->samples_per_s);
        printf("Test set accuracy %.4f\n", r->accuracy);
        if (t->o->profile)
            printf("Profile: %.2f s waiting for data, %.2f s in training steps, %.2f s other; "
                   "pipeline op seconds: reader %.2f, decode %.2f, other ops %.2f; "
                   "validation %.3f s\n",
                   r->wait_s, r->step_s, r->seconds - r->wait_s - r->step_s, r->reader_s,
                   r->decode_s, r->ops_s, r->eval_s);
        fflush(stdout);
    }
    const char *metrics = t->o->metrics_path;
    if (t->lead && metrics) {
        if (sl_cli_metrics_line(metrics, t->com->resume || t->metrics_written, r))
            return wfail(w, "--metrics %s: the epoch's line could not be written", metrics);
        t->metrics_written = true;
    }
    return t->com->ck_path ? save_checkpoint(t, r->epoch) : 0;
}

/* {"epochs": [...]} on stdout. */
static void report_json(const train_run *t) {
    const sl_mlp_config *m = &t->o->tc.model;
    printf("{\"devices\": %d, \"batch_per_device\": %d, \"threads\": %d, \"model\": [",
           t->K * t->w->size, t->B, sl_pipeline_num_threads(sl_iter_pipeline(t->train, 0)));
    for (int i = 0; i < m->nsizes; i++) printf("%s%d", i ? ", " : "", m->sizes[i]);
    printf("], \"epochs\": [");
    for (int i = 0; i < t->nres; i++) {
        const sl_cli_epoch *r = &t->results[i];
        printf("%s{\"epoch\": %d, \"seconds\": %.6f, \"samples_per_s\": %.1f, \"loss\": %.8g, "
               "\"accuracy\": %.6f",
               i ? ", " : "", r->epoch, r->seconds, r->samples_per_s, r->loss, r->accuracy);
        if (t->o->profile)
            printf(", \"wait_s\": %.6f, \"step_s\": %.6f, \"reader_s\": %.6f, "
                   "\"decode_s\": %.6f, \"ops_s\": %.6f, \"eval_s\": %.6f",
                   r->wait_s, r->step_s, r->reader_s, r->decode_s, r->ops_s, r->eval_s);
        printf("}");
    }
    printf("]}\n");
}

/* The epochs, then the --json report. 0, or the exit status. */
static int train_epochs(train_run *t) {
    int rc = 0;
    while (sl_iter_epoch(t->train) < t->com->epochs && rc == 0) {
        sl_cli_epoch r;
        memset(&r, 0, sizeof r);
        r.epoch = sl_iter_epoch(t->train);
        if ((rc = train_steps(t, &r)) == 0) rc = end_epoch(t, &r);
    }
    if (t->com->json && t->lead) report_json(t);
    return rc;
}

/* Frees what the run made; rc: how it went. */
static void finish(train_run *t, int rc) {
    if (t->nccl.started && sl_cli_nccl_join(&t->nccl, &t->e) == SL_OK) {
        memcpy(t->comms, t->nccl.comms, sizeof t->comms); /* a failure before they were taken */
        t->ncomms = t->nccl.cc.size;
    }
    double t_end = sl_cli_now();
    sl_trainer_free(t->tr);
    double t_tr = sl_cli_now();
    /* After a run that went well the process ends here (under mpirun after MPI_Finalize, which
     * NCCL's group does not use once made): tearing the group down would take ~0.45 s
     * (ncclCommDestroy waits on its threads; ncclCommAbort takes as long), and the end of the
     * process frees the same. After a failure it is torn down properly. */
    if (!(t->nccl_own && rc == 0))
        for (int k = 0; k < t->ncomms; k++) sl_comm_free(t->comms[k]);
    double t_comm = sl_cli_now();
    free(t->resume_bytes);
    sl_onehot_free(t->oh);
    sl_iter_free(t->val);
    sl_iter_free(t->train);
    if (t->o->profile && t->lead && t->t_start > 0)
        fprintf(stderr,
                "teardown: trainer %.3f s, comms %.3f s, pipelines %.3f s; %.2f s since the "
                "process started\n",
                t_tr - t_end, t_comm - t_tr, sl_cli_now() - t_comm, sl_cli_process_age());
    free(t->train_text);
    free(t->val_text);
    sl_pipeline_decorator_clear(&t->tdeco);
    sl_pipeline_decorator_clear(&t->vdeco);
    /* an early failure must not end the process while cuBLAS's initialisers still run on the
     * preload thread: wait for the load (done long since after any training step) */
    if (t->blas_preloading) (void)sl_train_preload_wait(NULL);
}

static int train_main(int argc, char **argv, sl_cli_world *w) {
    sl_cli_opts com;
    train_opts o;
    int rc = parse_options(argc, argv, &com, &o);
    if (rc >= 0) return rc;
    train_run *t = calloc(1, sizeof *t);
    if (!t) return sl_cli_fail("train", "out of memory");
    t->com = &com;
    t->o = &o;
    t->w = w;
    t->lead = w->rank == 0;
    sl_err_clear(&t->e);
    if ((rc = check_args(t)) == 0 && (rc = class_maps(t)) == 0) {
        make_binds(t);
        training_config(t);
        if ((rc = read_decorators(t)) == 0 && (rc = settle_training(t)) == 0 &&
            (rc = open_training(t)) == 0 && (rc = open_validation(t)) == 0 &&
            (rc = make_trainer(t)) == 0 && (rc = begin(t)) == 0)
            rc = train_epochs(t);
    }
    finish(t, rc);
    free(t);
    return rc;
}

int sl_cli_train(int argc, char **argv) {
    sl_cli_world w;
    if (sl_cli_world_init(&w, &argc, &argv)) return 1;
    int rc = train_main(argc, argv, &w);
    sl_cli_world_finalize(&w);
    return rc;
}
