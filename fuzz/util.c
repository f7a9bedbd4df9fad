/* SPDX-License-Identifier: Apache-2.0 */
/* Temporary files for the harnesses whose entry point reads a file. */
#include "fuzz.h"
#include "sluice/pipeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[256];

const char *fuzz_dir(void) {
    if (!dir[0]) {
        const char *t = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/sluice-fuzz-XXXXXX", t && *t ? t : "/tmp");
        if (!mkdtemp(dir)) abort();
    }
    return dir;
}

const char *fuzz_write_file(const char *name, const uint8_t *data, size_t size) {
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", fuzz_dir(), name);
    FILE *f = fopen(path, "wb");
    if (!f) return NULL;
    if (size && fwrite(data, 1, size, f) != size) {
        fclose(f);
        return NULL;
    }
    return fclose(f) == 0 ? path : NULL;
}

void fuzz_checkpoint_config(sl_iter_config *c, const char *fixtures, int global, int ndev) {
    static const char text[] =
        "def p(data_path):\n"
        "    jpegs, labels = fn.readers.caffe2(path=data_path, random_shuffle=True, name=\"r\")\n"
        "    images = fn.decoders.image(jpegs, output_type=types.GRAY)\n"
        "    return images, labels\n";
    static char path[4096];
    static sl_pipeline_bind bind;
    snprintf(path, sizeof path, "%s/caffe2-fmnist-256", fixtures);
    bind.name = "data_path";
    bind.value = path;
    sl_iter_config_init(c);
    c->text = text;
    c->binds = &bind;
    c->nbinds = 1;
    c->batch_size = 16;
    c->num_threads = 1;
    c->prefetch_cpu = c->prefetch_gpu = 1;
    c->reader_name = "r";
    c->global_order = global;
    c->ndevices = ndev;
    for (int d = 0; d < ndev; d++) c->devices[d] = sl_cpu();
}

void fuzz_run_text(const char *text, int batch_size, int batches, const char *what) {
    sl_pipeline_config cfg;
    sl_pipeline_config_init(&cfg);
    cfg.batch_size = batch_size;
    cfg.num_threads = 1;
    cfg.prefetch_cpu = cfg.prefetch_gpu = 1;
    sl_pipeline *p;
    sl_err err;
    if (sl_pipeline_create(&cfg, &p, &err) != SL_OK) return;
    if (sl_pipeline_parse(p, text, "fuzz.py", 0, NULL, &err) == SL_OK &&
        sl_pipeline_build(p) == SL_OK) {
        for (int i = 0; i < batches; i++) {
            sl_batch *b;
            if (sl_pipeline_next(p, &b) != SL_OK) break;
            sl_pipeline_release(p, b);
        }
    }
    if (getenv("FUZZ_VERBOSE")) fprintf(stderr, "%s: %s\n", what, sl_pipeline_errmsg(p));
    sl_pipeline_free(p);
}
