/* SPDX-License-Identifier: Apache-2.0 */
/* Pipeline text (DALI's Python syntax) through the parser into a CPU pipeline's graph; the
 * decorator reader too. Nothing is built: stores are not opened. */
#include "fuzz.h"
#include "sluice/pipeline.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    sl_err err;
    sl_pipeline_decorator d;
    sl_pipeline_text_decorator(text, "fuzz.py", &d, &err);
    sl_pipeline_decorator_clear(&d);
    sl_pipeline_config cfg;
    sl_pipeline_config_init(&cfg);
    cfg.batch_size = 4;
    cfg.num_threads = 1;
    sl_pipeline *p;
    if (sl_pipeline_create(&cfg, &p, &err) == SL_OK) {
        sl_pipeline_bind binds[3] = {
            {"data_path", "/nonexistent"}, {"image_size", "28"}, {"num_classes", "10"}};
        sl_pipeline_parse(p, text, "fuzz.py", 3, binds, &err);
        sl_pipeline_free(p);
    }
    free(text);
    return 0;
}
