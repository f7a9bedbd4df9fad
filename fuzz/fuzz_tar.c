/* SPDX-License-Identifier: Apache-2.0 */
/* A WebDataset shard (tar), indexed and every sample's files looked up, as readers.webdataset
 * does. */
#include "fuzz.h"
#include "io/wds.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_write_file("shard.tar", data, size);
    if (!path) return 0;
    const char *paths[1] = {path};
    sl__wds *w;
    sl_err err;
    if (sl__wds_open(1, paths, NULL, &w, &err) != SL_OK) return 0;
    for (int64_t i = 0; i < sl__wds_count(w) && i < 4096; i++) {
        sl__wds_key(w, i);
        sl__wds_path(w, i);
    }
    sl__wds_close(w);
    return 0;
}
