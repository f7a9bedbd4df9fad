/* SPDX-License-Identifier: Apache-2.0 */
/* Writes the JPEG bytes and labels of a Caffe2 LMDB (as the seed's readers.caffe2 reads it) to one
 * flat file, so that the PyTorch peers of bench_pipeline_cpu.sh and bench_train_cpu.sh decode the
 * very bytes sluice decodes without a Python LMDB binding. Format: "SLJPEGS1", u32 count, then per
 * record in LMDB order: i32 label, u32 length, the encoded image bytes (little-endian). usage:
 * build/export_jpegs LMDB_DIR OUT_FILE */
#include "io/caffe2.h"
#include "io/lmdb.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s LMDB_DIR OUT_FILE\n", argv[0]);
        return 2;
    }
    sl_err e;
    sl__lmdb *db;
    const char *paths[1] = {argv[1]};
    if (sl__lmdb_open(1, paths, &db, &e)) {
        fprintf(stderr, "export_jpegs: %s\n", e.msg);
        return 1;
    }
    FILE *f = fopen(argv[2], "wb");
    if (!f) {
        perror(argv[2]);
        sl__lmdb_close(db);
        return 1;
    }
    int64_t n = sl__lmdb_count(db);
    uint32_t count = (uint32_t)n;
    int rc = fwrite("SLJPEGS1", 1, 8, f) != 8 || fwrite(&count, 4, 1, f) != 1;
    static sl__caffe2_record rec;
    for (int64_t i = 0; i < n && !rc; i++) {
        const uint8_t *v;
        size_t len;
        sl__lmdb_value(db, i, &v, &len);
        double label;
        if (sl__caffe2_parse(v, len, &rec, &e) || rec.n < 2 || !rec.t[0].str0 ||
            sl__caffe2_values(&rec.t[1], &label, 1) != 1) {
            fprintf(stderr, "export_jpegs: record %lld: not an (encoded image, label) record\n",
                    (long long)i);
            rc = 1;
            break;
        }
        int32_t lab = (int32_t)label;
        uint32_t m = (uint32_t)rec.t[0].nstr0;
        rc = fwrite(&lab, 4, 1, f) != 1 || fwrite(&m, 4, 1, f) != 1 ||
             fwrite(rec.t[0].str0, 1, m, f) != m;
    }
    if (fclose(f) != 0) rc = 1;
    sl__lmdb_close(db);
    if (rc) {
        fprintf(stderr, "export_jpegs: writing %s failed\n", argv[2]);
        return 1;
    }
    fprintf(stderr, "export_jpegs: %lld records from %s to %s\n", (long long)n, argv[1], argv[2]);
    return 0;
}
