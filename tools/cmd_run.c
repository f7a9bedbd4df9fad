/* SPDX-License-Identifier: Apache-2.0 */
/* sluice run: runs a pipeline file on every device through the iterator, epoch by epoch; prints
 * samples/s and per-stage time, and optionally traces every delivered sample, dumps every output as
 * .npy, and checkpoints/resumes mid-epoch. */
#include "cli.h"
#include "common.h"
#include "options.h"
#include "settings.h"
#include "world.h"

#include "sluice/iterator.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *usage_text =
    "usage: sluice run PIPELINE [options]\n"
    "  --arg NAME=VALUE      bind a def parameter or free name (repeatable)\n"
    "  --pipeline NAME       the text's function that is the pipeline (default: the one with\n"
    "                        @pipeline_def/@data_iterator, else the only one no other calls)\n"
    "  --batch-size N        global batch size, over all devices (default: the decorator's\n"
    "                        batch_size, which is per pipeline as in DALI, times the devices;\n"
    "                        else 200)\n"
    "  --devices D           cpu, cpu:K, all, or GPU ids 0,1,... (default: the decorator's\n"
    "                        device_id, None meaning cpu; else cpu)\n"
    "  --epochs E            epochs to run, counted from epoch 0 (default 1)\n"
    "  --steps N             stop after N steps of this run (needed when the epoch has no size)\n"
    "  --reader NAME         the reader whose epoch counts (default: the decorator's reader_name,\n"
    "                        else the only reader)\n"
    "  --threads N           CPU threads per pipeline (default: the decorator's num_threads,\n"
    "                        else chosen from the machine: the CPUs this process may run on\n"
    "                        over the pipelines of this node's processes, less one, 1..64;\n"
    "                        printed with the devices, and in --json as \"threads\")\n"
    "  --prefetch N          batches prepared ahead per pipeline (default: the decorator's\n"
    "                        prefetch_queue_depth, else 2)\n"
    "  --seed S              pipeline seed (default: the decorator's seed, else 0)\n"
    "  --layout sharded|stacked  output layout (default: the decorator's)\n"
    "  --order dali|global   dali (default): each device reads its own shard, as DALI; global:\n"
    "                        one order of all records per epoch, the same batches on any\n"
    "                        device count (docs/iterator.md)\n"
    "  --trace FILE          one line per sample: epoch, step, device, slot, key\n"
    "  --dump DIR            write every output of every batch as .npy\n"
    "  --dump-steps N        dump only the first N steps of each epoch\n"
    "  --checkpoint FILE --checkpoint-at STEP   save after STEP steps of this run, then stop\n"
    "  --resume FILE         continue from a checkpoint\n"
    "  --json                print a JSON summary on stdout\n"
    "A flag given on the command line wins over the decorator's setting (and says so on stderr).\n"
    "Start-up (building the pipelines) is timed apart; each epoch's time covers all its batches,\n"
    "the first one included. The outputs (shape, dtype, layout, device) are listed once.\n"
    "Under mpirun each process runs its devices' pipelines with global shard ids (--devices all:\n"
    "the GPU of its local rank); rank 0 prints;\n"
    "each rank writes its trace to FILE.<rank> (device = global shard id); --checkpoint gathers\n"
    "every rank's state into one file.\n";

typedef struct {
    double seconds;
    int64_t steps, samples;
    /* what the pipelines' stages took in this epoch (all devices); the CPU stage runs a few
     * batches ahead, so an epoch's figures are those of the batches produced while it ran */
    double reader_s, decode_s, cpu_ops_s, gpu_s, cpu_stage_s;
} epoch_stat;

/* Stage and op times of every device's pipeline, summed. */
static void total_stats(sl_iter *it, sl_pipeline_stats *total) {
    memset(total, 0, sizeof *total);
    for (int d = 0; d < sl_iter_num_devices(it); d++) {
        sl_pipeline_stats s;
        sl_pipeline_get_stats(sl_iter_pipeline(it, d), &s);
        total->reader_s += s.reader_s;
        total->decode_s += s.decode_s;
        total->cpu_ops_s += s.cpu_ops_s;
        total->gpu_s += s.gpu_s;
        total->wait_s += s.wait_s;
        total->cpu_stage_s += s.cpu_stage_s;
        total->batches += s.batches;
        total->num_ops = s.num_ops;
        for (int k = 0; k < s.num_ops; k++) {
            memcpy(total->ops[k].name, s.ops[k].name, sizeof s.ops[k].name);
            total->ops[k].seconds += s.ops[k].seconds;
        }
    }
}

static int dump_batch(const char *dir, const sl_iter *it, const sl_iter_batch *b, int epoch,
                      int64_t step) {
    for (int o = 0; o < sl_iter_num_outputs(it); o++) {
        for (int d = 0; d < sl_iter_batch_devices(b); d++) {
            sl_tensor t;
            sl_err e;
            char path[4096];
            const char *name = sl_iter_output_name(it, o);
            if (sl_iter_shard(b, o, d, &t, &e) == SL_OK) {
                snprintf(path, sizeof path, "%s/%s_%d_%lld_%d.npy", dir, name, epoch,
                         (long long)step, d);
                if (sl_cli_write_npy("run", path, &t)) return 1;
                continue;
            }
            /* samples differ in shape: one file per sample */
            const sl_tlist *l = sl_iter_shard_list(b, o, d);
            for (int s = 0; l && s < l->count; s++) {
                sl_tlist_sample(l, s, &t);
                snprintf(path, sizeof path, "%s/%s_%d_%lld_%d_%d.npy", dir, name, epoch,
                         (long long)step, d, s);
                if (sl_cli_write_npy("run", path, &t)) return 1;
            }
        }
    }
    return 0;
}

/* What the tool tells of each output, from the first batch (-1 ndim: samples differ in shape). */
typedef struct {
    const char *name;
    int ndim, gndim;
    int64_t shape[SL_MAX_DIMS], gshape[SL_MAX_DIMS];
    char dtype[16], layout[SL_LAYOUT_MAX + 1], device[32];
} output_info;

static int describe_outputs(const sl_iter *it, const sl_iter_batch *b, output_info *outs) {
    int n = sl_iter_num_outputs(it);
    for (int o = 0; o < n; o++) {
        output_info *oi = &outs[o];
        memset(oi, 0, sizeof *oi);
        oi->name = sl_iter_output_name(it, o);
        oi->ndim = oi->gndim = -1;
        sl_tensor t;
        sl_err e;
        sl_device dev = {0};
        if (sl_iter_shard(b, o, 0, &t, &e) == SL_OK) {
            oi->ndim = t.ndim;
            memcpy(oi->shape, t.shape, sizeof t.shape);
            snprintf(oi->dtype, sizeof oi->dtype, "%s", sl_dtype_name(t.dtype));
            snprintf(oi->layout, sizeof oi->layout, "%s", t.layout);
            dev = t.device;
            if (sl_iter_global_shape(b, o, &oi->gndim, oi->gshape, &e) != SL_OK) oi->gndim = -1;
        } else {
            const sl_tlist *l = sl_iter_shard_list(b, o, 0);
            if (l && l->count > 0) {
                sl_tlist_sample(l, 0, &t);
                snprintf(oi->dtype, sizeof oi->dtype, "%s", sl_dtype_name(t.dtype));
                snprintf(oi->layout, sizeof oi->layout, "%s", t.layout);
                dev = t.device;
            }
        }
        if (dev.kind == SL_DEVICE_CUDA)
            snprintf(oi->device, sizeof oi->device, "gpu");
        else
            snprintf(oi->device, sizeof oi->device, "cpu");
    }
    return n;
}

static void print_shape(FILE *f, int ndim, const int64_t *shape, const char *open,
                        const char *close) {
    if (ndim < 0) {
        fprintf(f, "%s", open[0] == '[' ? "null" : "(samples differ)");
        return;
    }
    fputs(open, f);
    for (int i = 0; i < ndim; i++) fprintf(f, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (ndim == 1 && open[0] == '(') fputc(',', f);
    fputs(close, f);
}

static void print_outputs(FILE *f, const output_info *outs, int n, int devices) {
    fprintf(f, "outputs:\n");
    for (int o = 0; o < n; o++) {
        const output_info *oi = &outs[o];
        fprintf(f, "  %s: ", oi->name);
        print_shape(f, oi->gndim, oi->gshape, "(", ")");
        fprintf(f, " global, ");
        print_shape(f, oi->ndim, oi->shape, "(", ")");
        fprintf(f, " per device (%d), %s, layout %s, on %s\n", devices, oi->dtype,
                oi->layout[0] ? oi->layout : "-", oi->device);
    }
}

static int run_main(int argc, char **argv, sl_cli_world *w);

int sl_cli_run(int argc, char **argv) {
    sl_cli_world w;
    if (sl_cli_world_init(&w, &argc, &argv)) return 1;
    int rc = run_main(argc, argv, &w);
    sl_cli_world_finalize(&w);
    return rc;
}

/* What `sluice run` was asked to do: the shared flags, the iterator's settings, and the run's
 * own. */
typedef struct run_opts {
    sl_cli_opts com;
    const char *path; /* the pipeline file */
    sl_iter_config c;
    long long checkpoint_at, dump_steps, max_steps;
    const char *trace_path, *dump_dir;
} run_opts;

/* ---- the options: the shared ones (options.c) and these -------------------------------------- */

static int take_prefetch(sl_cli_opts *com, void *own, const char *cmd, char *v) {
    (void)own;
    long long n;
    if (sl_cli_opt_int(cmd, "--prefetch", v, 1, 1024, &n)) return 2;
    com->set.prefetch = (int)n;
    com->flags.prefetch = v;
    return 0;
}

static int take_layout(sl_cli_opts *com, void *own, const char *cmd, char *v) {
    (void)com;
    run_opts *o = own;
    if (!strcmp(v, "sharded"))
        o->c.layout = SL_LAYOUT_SHARDED;
    else if (!strcmp(v, "stacked"))
        o->c.layout = SL_LAYOUT_STACKED;
    else
        return sl_cli_fail(cmd, "--layout sharded or stacked, not '%s'", v), 2;
    return 0;
}

#define AT(field) offsetof(run_opts, field)
static const sl_cli_option run_options[] = {
    {"--steps", SL_CLI_LLONG, AT(max_steps), 1, LLONG_MAX, 0, NULL},
    {"--reader", SL_CLI_STR, AT(c.reader_name), 0, 0, 0, NULL},
    {"--prefetch", SL_CLI_SPECIAL, 0, 0, 0, 0, take_prefetch},
    {"--layout", SL_CLI_SPECIAL, 0, 0, 0, 0, take_layout},
    {"--trace", SL_CLI_STR, AT(trace_path), 0, 0, 0, NULL},
    {"--dump", SL_CLI_STR, AT(dump_dir), 0, 0, 0, NULL},
    {"--dump-steps", SL_CLI_LLONG, AT(dump_steps), 0, LLONG_MAX, 0, NULL},
    {"--checkpoint-at", SL_CLI_LLONG, AT(checkpoint_at), 0, LLONG_MAX, 0, NULL},
};
#undef AT

static const sl_cli_command run_command = {"run", NULL, run_options,
                                           sizeof run_options / sizeof run_options[0], true};

/* Reads the command line into o; -1 to go on, else the exit status (--help: 0). */
static int parse_options(int argc, char **argv, run_opts *o) {
    sl_cli_command cmd = run_command;
    cmd.usage = usage_text;
    int rc = sl_cli_parse_options(&cmd, argc, argv, &o->com, o, &o->path);
    if (rc >= 0) return rc;
    if ((o->checkpoint_at >= 0) != (o->com.ck_path != NULL))
        return sl_cli_fail("run", "--checkpoint and --checkpoint-at go together"), 2;
    if (o->dump_steps >= 0 && !o->dump_dir)
        return sl_cli_fail("run", "--dump-steps %lld limits --dump DIR, which is not given",
                           o->dump_steps),
               2;
    o->c.function = o->com.function;
    o->c.resume = o->com.resume;
    o->c.global_order = o->com.global_order;
    return -1;
}

/* ---- the phases of a run ------------------------------------------------------------------- */

/* The files the run writes can be made: found now, not after the first batch. 0 or 1. */
static int check_outputs(const run_opts *o, const sl_cli_world *w) {
    if (o->dump_dir && mkdir(o->dump_dir, 0755) != 0 && errno != EEXIST)
        return sl_cli_fail("run", "--dump %s: %s", o->dump_dir, strerror(errno));
    if (o->dump_dir) {
        char probe[4096];
        snprintf(probe, sizeof probe, "%s/.sluice", o->dump_dir);
        if (sl_cli_probe("run", "--dump", probe, false)) return 1;
    }
    if (o->com.ck_path && w->rank == 0 &&
        sl_cli_probe("run", "--checkpoint", o->com.ck_path, false))
        return 1;
    return 0;
}

/* The text's decorator settings where no flag overrides them, this process's devices, shards and
 * threads (the library's rules), and the --arg names. -1 to go on, else the exit status. */
static int settle(run_opts *o, const sl_cli_world *w, const char *text, sl_err *err) {
    sl_iter_config *c = &o->c;
    bool lead = w->rank == 0;
    sl_pipeline_decorator deco;
    memset(&deco, 0, sizeof deco);
    c->filename = o->path;
    if (sl_pipeline_text_function_decorator(text, o->path, c->function, &deco, err)) {
        sl_pipeline_decorator_clear(&deco);
        return sl_cli_world_fail(w, "run", err->msg);
    }
    sl_cli_world_settings(w, &o->com.set);
    bool bad = sl_cli_settle_devices("run", &deco, &o->com.flags, &o->com.set, lead, c, err) ||
               sl_cli_settle("run", &deco, &o->com.flags, &o->com.set, lead, c, err);
    sl_pipeline_decorator_clear(&deco);
    if (bad) return sl_cli_fail("run", "%s", err->msg), 2;
    const char *texts[1] = {text}, *names[1] = {o->path};
    if (sl_cli_check_binds(texts, names, 1, o->com.binds, o->com.nbinds, err))
        return sl_cli_fail("run", "%s", err->msg), 2;
    return -1;
}

/* The iterator over every device, from the checkpoint when resuming; *startup: the seconds it took
 * to build. 0, or the exit status. */
static int open_iter(run_opts *o, const sl_cli_world *w, sl_iter **out, double *startup,
                     sl_err *err) {
    sl_iter_config *c = &o->c;
    void *resume_bytes = NULL;
    if (c->resume) {
        size_t n;
        if (sl_cli_world_load(w, c->resume, c->global_order == 1, &resume_bytes, &n, err))
            return sl_cli_world_fail(w, "run", err->msg);
        c->resume_bytes = resume_bytes;
        c->resume_size = n;
    }
    sl_iter *it;
    double t0 = sl_cli_now();
    sl_status cst = sl_iter_create(c, &it, err);
    *startup = sl_cli_now() - t0;
    free(resume_bytes);
    if (cst) return sl_cli_world_fail(w, "run", err->msg);
    if (o->max_steps < 0 &&
        sl_cli_check_epoch(it, o->path, ", or --reader NAME, or bound the run with --steps N",
                           err)) {
        sl_iter_free(it);
        return sl_cli_world_fail(w, "run", err->msg);
    }
    *out = it;
    return 0;
}

/* A run under way: the iterator, what it has done, what it has found. */
typedef struct run_state {
    const run_opts *o;
    const sl_cli_world *w;
    sl_iter *it;
    bool lead, json;
    sl_cli_out trace_out;
    FILE *trace; /* trace_out's file, or NULL */
    int ndev, B, threads;
    double startup;
    epoch_stat stats[256];
    int nstats;
    long long run_steps;
    bool stopped;
    output_info *outs; /* nouts */
    int nouts;
    sl_pipeline_stats before, total;
} run_state;

/* The trace goes to a temporary file beside its path, renamed over it when the run went well
 * (each rank its own under mpirun). 0 or 1. */
static int open_trace(run_state *r) {
    const char *trace_path = r->o->trace_path;
    if (!trace_path) return 0;
    char tp[4096];
    if (r->w->size > 1)
        snprintf(tp, sizeof tp, "%s.%d", trace_path, r->w->rank);
    else
        snprintf(tp, sizeof tp, "%s", trace_path);
    if (sl_cli_out_open(&r->trace_out, "run", tp, r->o->c.resume != NULL)) return 1;
    r->trace = r->trace_out.f;
    if (ftell(r->trace) == 0) /* resumed: already there */
        fputs("# epoch\tstep\tdevice\tslot\tkey\n", r->trace);
    return 0;
}

/* Saves the checkpoint after this run's checkpoint_at steps; the run stops there. */
static int save_checkpoint(run_state *r, int epoch, int64_t step) {
    const run_opts *o = r->o;
    int rc = 0;
    void *bytes = NULL;
    size_t blen = 0;
    sl_err err;
    sl_err_clear(&err);
    if (sl_iter_save(r->it, NULL, 0, &bytes, &blen) ||
        sl_cli_world_save(r->w, o->com.ck_path, bytes, blen, &err)) {
        rc = sl_cli_world_fail(r->w, "run", err.msg[0] ? err.msg : sl_iter_errmsg(r->it));
    } else if (!r->json && r->lead) {
        fprintf(stderr,
                "sluice run: checkpoint after %lld steps (epoch %d step %lld) "
                "written to %s\n",
                r->run_steps, epoch, (long long)step, o->com.ck_path);
    }
    free(bytes);
    r->stopped = true;
    return rc;
}

/* One batch: described (the first), traced, dumped, checkpointed (*stop: the run ends there).
 * 0, or the exit status. */
static int take_batch(run_state *r, const sl_iter_batch *b, int epoch, epoch_stat *es, bool *stop) {
    const run_opts *o = r->o;
    sl_iter *it = r->it;
    int64_t step = sl_iter_step(it) - 1;
    int rc;
    if (r->nouts == 0 && sl_iter_num_outputs(it) > 0) {
        if (!(r->outs = calloc((size_t)sl_iter_num_outputs(it), sizeof *r->outs))) {
            fprintf(stderr, "sluice run: out of memory describing %d outputs\n",
                    sl_iter_num_outputs(it));
            return 1;
        }
        r->nouts = describe_outputs(it, b, r->outs);
        if (!r->json && r->lead) print_outputs(stderr, r->outs, r->nouts, r->ndev * r->w->size);
    }
    es->steps++;
    es->samples += (int64_t)r->ndev * r->w->size * r->B;
    if (r->trace) {
        int dev0 = r->w->rank * r->ndev; /* global shard id of this process's first device */
        for (int d = 0; d < r->ndev; d++)
            for (int s = 0; s < r->B; s++)
                fprintf(r->trace, "%d\t%lld\t%d\t%d\t%s\n", epoch, (long long)step, dev0 + d, s,
                        sl_iter_key(b, d, s));
        if ((rc = sl_cli_out_failed(&r->trace_out, "run"))) return rc;
    }
    if (o->dump_dir && (o->dump_steps < 0 || step < o->dump_steps) &&
        (rc = dump_batch(o->dump_dir, it, b, epoch, step)))
        return rc;
    if (++r->run_steps == o->checkpoint_at) {
        *stop = true;
        return save_checkpoint(r, epoch, step);
    }
    return 0;
}

/* One epoch, timed, with a progress bar on a terminal. 0, or the exit status. */
static int run_epoch(run_state *r) {
    const run_opts *o = r->o;
    sl_iter *it = r->it;
    int rc = 0, epoch = sl_iter_epoch(it);
    double t0 = sl_cli_now();
    epoch_stat es;
    memset(&es, 0, sizeof es);
    bool interactive = !r->json && r->lead && sl_cli_interactive();
    const sl_iter_batch *b;
    sl_status st;
    long long want = sl_iter_len(it);
    long long bound = sl_iter_step(it) + o->max_steps - r->run_steps; /* where --steps stops */
    if (o->max_steps >= 0 && (want < 0 || bound < want)) want = bound;
    char label[32];
    snprintf(label, sizeof label, "Epoch %d", epoch);
    while ((st = sl_iter_next(it, &b)) == SL_OK) {
        int64_t step = sl_iter_step(it) - 1;
        bool stop = false;
        rc = take_batch(r, b, epoch, &es, &stop);
        if (rc || stop) break;
        if (interactive) sl_cli_progress(label, step + 1, want);
        if (o->max_steps >= 0 && r->run_steps >= o->max_steps) {
            r->stopped = true;
            break;
        }
    }
    if (interactive) sl_cli_progress_end(); /* a line left open */
    if (st != SL_OK && st != SL_EOF) rc = sl_cli_world_fail(r->w, "run", sl_iter_errmsg(it));
    es.seconds = sl_cli_now() - t0;
    total_stats(it, &r->total);
    es.reader_s = r->total.reader_s - r->before.reader_s;
    es.decode_s = r->total.decode_s - r->before.decode_s;
    es.cpu_ops_s = r->total.cpu_ops_s - r->before.cpu_ops_s;
    es.gpu_s = r->total.gpu_s - r->before.gpu_s;
    es.cpu_stage_s = r->total.cpu_stage_s - r->before.cpu_stage_s;
    r->before = r->total;
    if (r->nstats < 256) r->stats[r->nstats++] = es;
    if (!r->json && r->lead && rc == 0)
        fprintf(stderr, "Epoch %d: %.3f s, %.0f samples/s, %lld steps%s\n", epoch, es.seconds,
                es.samples / (es.seconds > 0 ? es.seconds : 1e-9), (long long)es.steps,
                !r->stopped      ? ""
                : o->com.ck_path ? " (stopped at the checkpoint)"
                                 : " (stopped after --steps)");
    if (!r->stopped && rc == 0) sl_iter_reset(it);
    return rc;
}

/* The --json summary on stdout. */
static void report_json(const run_state *r, int rc) {
    const sl_pipeline_stats *total = &r->total;
    int devices = r->ndev * r->w->size;
    printf("{\"pipeline\": ");
    sl_cli_json_str(stdout, r->o->path);
    printf(", \"devices\": %d, \"batch_per_device\": %d, \"batch\": %d, \"threads\": %d, "
           "\"startup_s\": %.6f, \"outputs\": [",
           devices, r->B, r->B * devices, r->threads, r->startup);
    for (int o = 0; o < r->nouts; o++) {
        const output_info *oi = &r->outs[o];
        printf("%s{\"name\": ", o ? ", " : "");
        sl_cli_json_str(stdout, oi->name);
        printf(", \"shape\": ");
        print_shape(stdout, oi->gndim, oi->gshape, "[", "]");
        printf(", \"shape_per_device\": ");
        print_shape(stdout, oi->ndim, oi->shape, "[", "]");
        printf(", \"dtype\": ");
        sl_cli_json_str(stdout, oi->dtype);
        printf(", \"layout\": ");
        sl_cli_json_str(stdout, oi->layout);
        printf(", \"device\": ");
        sl_cli_json_str(stdout, oi->device);
        printf("}");
    }
    printf("], \"epochs\": [");
    for (int i = 0; i < r->nstats; i++) {
        const epoch_stat *s = &r->stats[i];
        printf("%s{\"seconds\": %.6f, \"steps\": %lld, \"samples\": %lld, \"samples_per_s\": "
               "%.1f, \"stages\": {\"reader_s\": %.6f, \"decode_s\": %.6f, \"cpu_ops_s\": "
               "%.6f, \"gpu_s\": %.6f, \"cpu_stage_s\": %.6f}}",
               i ? ", " : "", s->seconds, (long long)s->steps, (long long)s->samples,
               s->samples / (s->seconds > 0 ? s->seconds : 1e-9), s->reader_s, s->decode_s,
               s->cpu_ops_s, s->gpu_s, s->cpu_stage_s);
    }
    printf("], \"stages\": {\"reader_s\": %.6f, \"decode_s\": %.6f, \"cpu_ops_s\": %.6f, "
           "\"gpu_s\": %.6f, \"cpu_stage_s\": %.6f, \"consumer_wait_s\": %.6f}, \"ops\": {",
           total->reader_s, total->decode_s, total->cpu_ops_s, total->gpu_s, total->cpu_stage_s,
           total->wait_s);
    for (int k = 0; k < total->num_ops; k++) {
        printf("%s", k ? ", " : "");
        sl_cli_json_str(stdout, total->ops[k].name);
        printf(": %.6f", total->ops[k].seconds);
    }
    printf("}, \"error\": %s}\n", rc ? "true" : "false");
}

/* Per-stage time, summed over devices, on stderr. */
static void report_text(const run_state *r) {
    const sl_pipeline_stats *total = &r->total;
    fprintf(stderr,
            "stages (seconds each op took per batch, summed; all devices): reader %.3f, decode "
            "%.3f, "
            "other cpu ops %.3f, gpu %.3f; the CPU stage took %.3f s in all; consumer waited "
            "%.3f s\n",
            total->reader_s, total->decode_s, total->cpu_ops_s, total->gpu_s, total->cpu_stage_s,
            total->wait_s);
    for (int k = 0; k < total->num_ops; k++)
        fprintf(stderr, "  %-28s %.3f s\n", total->ops[k].name, total->ops[k].seconds);
}

/* The epochs, then the checkpoint's and the trace's ends and the report. */
static int run_epochs(run_state *r) {
    const run_opts *o = r->o;
    sl_iter *it = r->it;
    int rc = 0;
    r->ndev = sl_iter_num_devices(it);
    r->B = sl_iter_device_batch(it);
    r->threads = sl_pipeline_num_threads(sl_iter_pipeline(it, 0));
    if (!r->json && r->lead) {
        fprintf(stderr,
                "sluice run: %s on %d device(s), %d per device, %d CPU thread(s) per pipeline, "
                "%lld batches per epoch\n",
                o->path, r->ndev * r->w->size, r->B, r->threads, (long long)sl_iter_len(it));
        fprintf(stderr, "Start-up: %.3f s (building the pipelines)\n", r->startup);
    }
    total_stats(it, &r->before);
    while (!r->stopped && sl_iter_epoch(it) < o->com.epochs && rc == 0) rc = run_epoch(r);
    if (rc == 0 && o->com.ck_path && r->run_steps < o->checkpoint_at) {
        char msg[256];
        snprintf(msg, sizeof msg,
                 "--checkpoint-at %lld: the run ended after %lld steps; no checkpoint was written "
                 "(--epochs or --steps end it sooner)",
                 o->checkpoint_at, r->run_steps);
        rc = sl_cli_world_fail(r->w, "run", msg);
    }
    if (r->trace) { /* complete: renamed over the path; else removed */
        if (rc == 0)
            rc = sl_cli_out_close(&r->trace_out, "run");
        else
            sl_cli_out_discard(&r->trace_out);
    }
    total_stats(it, &r->total);
    if (r->json)
        report_json(r, rc);
    else if (r->lead)
        report_text(r);
    return rc;
}

static int run_main(int argc, char **argv, sl_cli_world *w) {
    run_opts o;
    memset(&o, 0, sizeof o);
    sl_cli_opts_init(&o.com);
    sl_iter_config_init(&o.c);
    o.checkpoint_at = o.dump_steps = o.max_steps = -1;
    int rc = parse_options(argc, argv, &o);
    if (rc >= 0) return rc;
    char *text = sl_cli_read_pipeline("run", o.path);
    if (!text) return 1;
    sl_err err;
    sl_err_clear(&err);
    if ((rc = check_outputs(&o, w)) != 0 || (rc = settle(&o, w, text, &err)) >= 0) {
        free(text);
        return rc;
    }
    o.c.text = text;
    o.c.filename = o.path;
    o.c.binds = o.com.binds;
    o.c.nbinds = o.com.nbinds;
    /* the first batch is made inside epoch 0's clock, not while the pipelines are built */
    o.c.prepare_first_batch = 0;
    run_state r;
    memset(&r, 0, sizeof r);
    r.o = &o;
    r.w = w;
    r.lead = w->rank == 0;
    r.json = o.com.json && r.lead;
    if ((rc = open_iter(&o, w, &r.it, &r.startup, &err)) == 0) {
        if ((rc = open_trace(&r)) == 0) rc = run_epochs(&r);
        sl_iter_free(r.it);
    }
    free(r.outs);
    free(text);
    return rc;
}
