/* SPDX-License-Identifier: Apache-2.0 */
/* sluice run: runs a pipeline file on every device through the iterator, epoch by epoch; prints
 * samples/s and per-stage time, and optionally traces every delivered sample, dumps every output as
 * .npy, and checkpoints/resumes mid-epoch. */
#include "cli.h"
#include "common.h"
#include "settings.h"
#include "world.h"

#include "sluice/iterator.h"

#include <errno.h>
#include <limits.h>
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
    "Under mpirun each process runs its devices' pipelines with global shard ids; rank 0 prints;\n"
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

static int run_main(int argc, char **argv, sl_cli_world *w) {
    sl_iter_config c;
    sl_iter_config_init(&c);
    sl_pipeline_bind binds[64];
    int nbinds = 0, epochs = 1, json = 0;
    long long checkpoint_at = -1, dump_steps = -1, max_steps = -1, opt_n;
    sl_cli_flags flags = {0}; /* the settings a decorator may also give, as typed */
    const char *path = NULL, *trace_path = NULL, *dump_dir = NULL, *ck_path = NULL;
    sl_err err;
    sl_err_clear(&err);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEED_VALUE                                                                                 \
    do {                                                                                           \
        if (!v) return sl_cli_fail("run", "%s needs a value", a), 2;                               \
        i++;                                                                                       \
    } while (0)
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage_text, stdout);
            return 0;
        } else if (!strcmp(a, "--arg")) {
            NEED_VALUE;
            if (nbinds == 64 || sl_cli_parse_bind(argv[i], &binds[nbinds]))
                return sl_cli_fail("run", "--arg wants NAME=VALUE, got '%s'", v), 2;
            nbinds++;
        } else if (!strcmp(a, "--pipeline")) {
            NEED_VALUE;
            c.function = v;
        } else if (!strcmp(a, "--batch-size")) {
            NEED_VALUE;
            if (sl_cli_opt_int("run", a, v, 1, INT_MAX, &opt_n)) return 2;
            c.batch_size = (int)opt_n;
            flags.batch_size = v;
        } else if (!strcmp(a, "--devices")) {
            NEED_VALUE;
            flags.devices = v;
            if (sl_iter_parse_devices(v, &c, &err)) return sl_cli_fail("run", "%s", err.msg), 2;
        } else if (!strcmp(a, "--epochs")) {
            NEED_VALUE;
            if (sl_cli_opt_int("run", a, v, 1, INT_MAX, &opt_n)) return 2;
            epochs = (int)opt_n;
        } else if (!strcmp(a, "--steps")) {
            NEED_VALUE;
            if (sl_cli_opt_int("run", a, v, 1, LLONG_MAX, &max_steps)) return 2;
        } else if (!strcmp(a, "--reader")) {
            NEED_VALUE;
            c.reader_name = v;
        } else if (!strcmp(a, "--threads")) {
            NEED_VALUE;
            if (sl_cli_opt_int("run", a, v, 1, 1024, &opt_n)) return 2;
            c.num_threads = (int)opt_n;
            flags.threads = v;
        } else if (!strcmp(a, "--prefetch")) {
            NEED_VALUE;
            if (sl_cli_opt_int("run", a, v, 1, 1024, &opt_n)) return 2;
            c.prefetch_cpu = c.prefetch_gpu = (int)opt_n;
            flags.prefetch = v;
        } else if (!strcmp(a, "--seed")) {
            NEED_VALUE;
            unsigned long long seed;
            if (sl_cli_opt_u64("run", a, v, &seed)) return 2;
            c.seed = seed;
            flags.seed = v;
        } else if (!strcmp(a, "--layout")) {
            NEED_VALUE;
            if (!strcmp(v, "sharded"))
                c.layout = SL_LAYOUT_SHARDED;
            else if (!strcmp(v, "stacked"))
                c.layout = SL_LAYOUT_STACKED;
            else
                return sl_cli_fail("run", "--layout sharded or stacked, not '%s'", v), 2;
        } else if (!strcmp(a, "--order")) {
            NEED_VALUE;
            if (!strcmp(v, "global") || !strcmp(v, "dali"))
                c.global_order = !strcmp(v, "global");
            else
                return sl_cli_fail("run", "--order dali or global, not '%s'", v), 2;
        } else if (!strcmp(a, "--trace")) {
            NEED_VALUE;
            trace_path = v;
        } else if (!strcmp(a, "--dump")) {
            NEED_VALUE;
            dump_dir = v;
        } else if (!strcmp(a, "--dump-steps")) {
            NEED_VALUE;
            if (sl_cli_opt_int("run", a, v, 0, LLONG_MAX, &dump_steps)) return 2;
        } else if (!strcmp(a, "--checkpoint")) {
            NEED_VALUE;
            ck_path = v;
        } else if (!strcmp(a, "--checkpoint-at")) {
            NEED_VALUE;
            if (sl_cli_opt_int("run", a, v, 0, LLONG_MAX, &checkpoint_at)) return 2;
        } else if (!strcmp(a, "--resume")) {
            NEED_VALUE;
            c.resume = v;
        } else if (!strcmp(a, "--json")) {
            json = 1;
        } else if (a[0] == '-') {
            return sl_cli_fail("run", "unknown option %s (see sluice run --help)", a), 2;
        } else if (!path) {
            path = a;
        } else {
            return sl_cli_fail("run", "one pipeline file only ('%s' and '%s')", path, a), 2;
        }
#undef NEED_VALUE
    }
    if (!path) {
        fputs(usage_text, stderr);
        return 2;
    }
    if ((checkpoint_at >= 0) != (ck_path != NULL))
        return sl_cli_fail("run", "--checkpoint and --checkpoint-at go together"), 2;
    if (dump_steps >= 0 && !dump_dir)
        return sl_cli_fail("run", "--dump-steps %lld limits --dump DIR, which is not given",
                           dump_steps),
               2;
    char *text = sl_cli_read_pipeline("run", path);
    if (!text) return 1;
    if (dump_dir && mkdir(dump_dir, 0755) != 0 && errno != EEXIST) {
        free(text);
        return sl_cli_fail("run", "--dump %s: %s", dump_dir, strerror(errno));
    }
    if (dump_dir) { /* a file can be made there: found now, not after the first batch */
        char probe[4096];
        snprintf(probe, sizeof probe, "%s/.sluice", dump_dir);
        if (sl_cli_probe("run", "--dump", probe, false)) {
            free(text);
            return 1;
        }
    }
    if (ck_path && w->rank == 0 && sl_cli_probe("run", "--checkpoint", ck_path, false)) {
        free(text);
        return 1;
    }
    c.text = text;
    c.filename = path;
    c.binds = binds;
    c.nbinds = nbinds;
    bool lead = w->rank == 0;
    /* the decorator's pipeline settings, unless a flag says otherwise */
    sl_pipeline_decorator deco;
    if (sl_pipeline_text_function_decorator(text, path, c.function, &deco, &err)) {
        free(text);
        return sl_cli_world_fail(w, "run", err.msg);
    }
    if (sl_cli_decorator_devices("run", path, &deco, &flags, lead, &c, &err)) {
        free(text);
        return sl_cli_fail("run", "%s", err.msg), 2;
    }
    c.shard_offset = w->rank * c.ndevices;
    c.total_shards = w->size * c.ndevices;
    if (sl_cli_decorator_settings("run", path, &deco, &flags, lead, &c, &err)) {
        free(text);
        return sl_cli_fail("run", "%s", err.msg), 2;
    }
    if (!flags.threads && deco.num_threads <= 0)
        c.num_threads = sl_cli_world_threads(w, c.ndevices);
    {
        const char *texts[1] = {text}, *names[1] = {path};
        if (sl_cli_check_binds(texts, names, 1, binds, nbinds, &err)) {
            free(text);
            return sl_cli_fail("run", "%s", err.msg), 2;
        }
    }
    /* the first batch is made inside epoch 0's clock, not while the pipelines are built */
    c.prepare_first_batch = 0;
    if (!lead) json = 0;
    void *resume_bytes = NULL;
    if (c.resume) {
        size_t n;
        if (sl_cli_world_load(w, c.resume, c.global_order == 1, &resume_bytes, &n, &err)) {
            free(text);
            return sl_cli_world_fail(w, "run", err.msg);
        }
        c.resume_bytes = resume_bytes;
        c.resume_size = n;
    }
    const char *resume_path = c.resume; /* c.resume stays: it names the bytes in messages */
    sl_iter *it;
    double t_startup = sl_cli_now();
    sl_status cst = sl_iter_create(&c, &it, &err);
    t_startup = sl_cli_now() - t_startup;
    free(resume_bytes);
    if (cst) {
        free(text);
        return sl_cli_world_fail(w, "run", err.msg);
    }
    if (max_steps < 0 &&
        sl_cli_check_epoch(it, path, ", or --reader NAME, or bound the run with --steps N", &err)) {
        sl_iter_free(it);
        free(text);
        return sl_cli_world_fail(w, "run", err.msg);
    }
    /* the trace goes to a temporary file beside it, renamed over it when the run went well */
    sl_cli_out trace_out = {.f = NULL};
    FILE *trace = NULL;
    if (trace_path) {
        char tp[4096];
        if (w->size > 1)
            snprintf(tp, sizeof tp, "%s.%d", trace_path, w->rank);
        else
            snprintf(tp, sizeof tp, "%s", trace_path);
        if (sl_cli_out_open(&trace_out, "run", tp, resume_path != NULL)) {
            sl_iter_free(it);
            free(text);
            return 1;
        }
        trace = trace_out.f;
        if (ftell(trace) == 0) /* resumed: already there */
            fputs("# epoch\tstep\tdevice\tslot\tkey\n", trace);
    }
    int rc = 0, ndev = sl_iter_num_devices(it), B = sl_iter_device_batch(it);
    int threads = sl_pipeline_num_threads(sl_iter_pipeline(it, 0));
    epoch_stat stats[256];
    int nstats = 0;
    long long run_steps = 0;
    bool stopped = false;
    int dev0 = w->rank * ndev; /* global shard id of this process's first device */
    if (!json && lead) {
        fprintf(stderr,
                "sluice run: %s on %d device(s), %d per device, %d CPU thread(s) per pipeline, "
                "%lld batches per epoch\n",
                path, ndev * w->size, B, threads, (long long)sl_iter_len(it));
        fprintf(stderr, "Start-up: %.3f s (building the pipelines)\n", t_startup);
    }
    output_info outs[SL_MAX_OUTPUTS];
    int nouts = 0;
    bool interactive = !json && lead && sl_cli_interactive();
    sl_pipeline_stats before, total;
    total_stats(it, &before);
    while (!stopped && sl_iter_epoch(it) < epochs && rc == 0) {
        int epoch = sl_iter_epoch(it);
        double t0 = sl_cli_now();
        epoch_stat es;
        memset(&es, 0, sizeof es);
        const sl_iter_batch *b;
        sl_status st;
        long long want = sl_iter_len(it), shown = 0;
        long long bound = sl_iter_step(it) + max_steps - run_steps; /* where --steps stops */
        if (max_steps >= 0 && (want < 0 || bound < want)) want = bound;
        char label[32];
        snprintf(label, sizeof label, "Epoch %d", epoch);
        while ((st = sl_iter_next(it, &b)) == SL_OK) {
            int64_t step = sl_iter_step(it) - 1;
            if (nouts == 0 && sl_iter_num_outputs(it) > 0) {
                nouts = describe_outputs(it, b, outs);
                if (!json && lead) print_outputs(stderr, outs, nouts, ndev * w->size);
            }
            es.steps++;
            es.samples += (int64_t)ndev * w->size * B;
            if (trace) {
                for (int d = 0; d < ndev; d++)
                    for (int s = 0; s < B; s++)
                        fprintf(trace, "%d\t%lld\t%d\t%d\t%s\n", epoch, (long long)step, dev0 + d,
                                s, sl_iter_key(b, d, s));
                if ((rc = sl_cli_out_failed(&trace_out, "run"))) break;
            }
            if (dump_dir && (dump_steps < 0 || step < dump_steps) &&
                (rc = dump_batch(dump_dir, it, b, epoch, step)))
                break;
            if (++run_steps == checkpoint_at) {
                void *bytes = NULL;
                size_t blen = 0;
                if (sl_iter_save(it, NULL, 0, &bytes, &blen) ||
                    sl_cli_world_save(w, ck_path, bytes, blen, &err)) {
                    rc = sl_cli_world_fail(w, "run", err.msg[0] ? err.msg : sl_iter_errmsg(it));
                } else if (!json && lead) {
                    fprintf(stderr,
                            "sluice run: checkpoint after %lld steps (epoch %d step %lld) "
                            "written to %s\n",
                            run_steps, epoch, (long long)step, ck_path);
                }
                free(bytes);
                stopped = true;
                break;
            }
            if (interactive && ((step + 1) % 10 == 0 || step + 1 == want)) {
                sl_cli_progress(label, step + 1, want);
                shown = step + 1;
            }
            if (max_steps >= 0 && run_steps >= max_steps) {
                stopped = true;
                break;
            }
        }
        if (interactive && shown > 0 && shown < want) fputc('\n', stderr); /* bar left open */
        if (st != SL_OK && st != SL_EOF) rc = sl_cli_world_fail(w, "run", sl_iter_errmsg(it));
        es.seconds = sl_cli_now() - t0;
        total_stats(it, &total);
        es.reader_s = total.reader_s - before.reader_s;
        es.decode_s = total.decode_s - before.decode_s;
        es.cpu_ops_s = total.cpu_ops_s - before.cpu_ops_s;
        es.gpu_s = total.gpu_s - before.gpu_s;
        es.cpu_stage_s = total.cpu_stage_s - before.cpu_stage_s;
        before = total;
        if (nstats < 256) stats[nstats++] = es;
        if (!json && lead && rc == 0)
            fprintf(stderr, "Epoch %d: %.3f s, %.0f samples/s, %lld steps%s\n", epoch, es.seconds,
                    es.samples / (es.seconds > 0 ? es.seconds : 1e-9), (long long)es.steps,
                    !stopped  ? ""
                    : ck_path ? " (stopped at the checkpoint)"
                              : " (stopped after --steps)");
        if (!stopped && rc == 0) sl_iter_reset(it);
    }
    if (rc == 0 && ck_path && run_steps < checkpoint_at) {
        char msg[256];
        snprintf(msg, sizeof msg,
                 "--checkpoint-at %lld: the run ended after %lld steps; no checkpoint was written "
                 "(--epochs or --steps end it sooner)",
                 checkpoint_at, run_steps);
        rc = sl_cli_world_fail(w, "run", msg);
    }
    if (trace) { /* complete: renamed over the path; else removed */
        if (rc == 0)
            rc = sl_cli_out_close(&trace_out, "run");
        else
            sl_cli_out_discard(&trace_out);
    }
    /* per-stage time, summed over devices */
    total_stats(it, &total);
    if (json) {
        printf("{\"pipeline\": ");
        sl_cli_json_str(stdout, path);
        printf(", \"devices\": %d, \"batch_per_device\": %d, \"batch\": %d, \"threads\": %d, "
               "\"startup_s\": %.6f, \"outputs\": [",
               ndev * w->size, B, B * ndev * w->size, threads, t_startup);
        for (int o = 0; o < nouts; o++) {
            const output_info *oi = &outs[o];
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
        for (int i = 0; i < nstats; i++)
            printf("%s{\"seconds\": %.6f, \"steps\": %lld, \"samples\": %lld, \"samples_per_s\": "
                   "%.1f, \"stages\": {\"reader_s\": %.6f, \"decode_s\": %.6f, \"cpu_ops_s\": "
                   "%.6f, \"gpu_s\": %.6f, \"cpu_stage_s\": %.6f}}",
                   i ? ", " : "", stats[i].seconds, (long long)stats[i].steps,
                   (long long)stats[i].samples,
                   stats[i].samples / (stats[i].seconds > 0 ? stats[i].seconds : 1e-9),
                   stats[i].reader_s, stats[i].decode_s, stats[i].cpu_ops_s, stats[i].gpu_s,
                   stats[i].cpu_stage_s);
        printf("], \"stages\": {\"reader_s\": %.6f, \"decode_s\": %.6f, \"cpu_ops_s\": %.6f, "
               "\"gpu_s\": %.6f, \"cpu_stage_s\": %.6f, \"consumer_wait_s\": %.6f}, \"ops\": {",
               total.reader_s, total.decode_s, total.cpu_ops_s, total.gpu_s, total.cpu_stage_s,
               total.wait_s);
        for (int k = 0; k < total.num_ops; k++) {
            printf("%s", k ? ", " : "");
            sl_cli_json_str(stdout, total.ops[k].name);
            printf(": %.6f", total.ops[k].seconds);
        }
        printf("}, \"error\": %s}\n", rc ? "true" : "false");
    } else if (lead) {
        fprintf(stderr,
                "stages (seconds each op took per batch, summed; all devices): reader %.3f, decode "
                "%.3f, "
                "other cpu ops %.3f, gpu %.3f; the CPU stage took %.3f s in all; consumer waited "
                "%.3f s\n",
                total.reader_s, total.decode_s, total.cpu_ops_s, total.gpu_s, total.cpu_stage_s,
                total.wait_s);
        for (int k = 0; k < total.num_ops; k++)
            fprintf(stderr, "  %-28s %.3f s\n", total.ops[k].name, total.ops[k].seconds);
    }
    sl_iter_free(it);
    free(text);
    return rc;
}
