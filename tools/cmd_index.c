/* SPDX-License-Identifier: Apache-2.0 */
/* sluice index: writes the index of a TFRecord file in DALI's format (that of DALI's tfrecord2idx
 * script: a line "offset length" per record, length counting the record's whole frame), the
 * index_path files readers.tfrecord takes, from the library's sl_tfrecord_index (sluice/dataset.h):
 * every record's framing and CRCs are checked on the way, so a corrupt file is refused, naming the
 * offset of its first bad record. OUT is written beside itself and renamed into place once whole.
 */
#include "cli.h"
#include "common.h"

#include "sluice/dataset.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(FILE *f) {
    fprintf(f, "usage: sluice index FILE.tfrecord [OUT]\n"
               "Writes FILE's index, a line \"offset length\" per record (DALI's tfrecord2idx\n"
               "format, readers.tfrecord's index_path), to OUT or, without OUT (or with -), to\n"
               "standard output. Checks every record's length and data CRCs.\n");
    return f == stdout ? 0 : 2;
}

int sl_cli_index(int argc, char **argv) {
    const char *in, *out;
    int rc =
        sl_cli_in_out(argc, argv, "index", "one TFRecord file and one output", usage, &in, &out);
    if (rc >= 0) return rc;
    sl_err e = {0};
    sl_tfrecord_entry *idx;
    int64_t n;
    if (sl_tfrecord_index(in, &idx, &n, &e)) return sl_cli_fail("index", "%s", e.msg);
    bool to_stdout = !out || !strcmp(out, "-");
    sl_cli_out o = {.f = stdout};
    if (!to_stdout && sl_cli_out_open(&o, "index", out, false)) {
        free(idx);
        return 1;
    }
    for (int64_t i = 0; i < n && !ferror(o.f); i++)
        fprintf(o.f, "%llu %lld\n", (unsigned long long)idx[i].offset, (long long)idx[i].size);
    free(idx);
    if (to_stdout) {
        errno = 0;
        if (fflush(stdout) != 0 || ferror(stdout))
            return sl_cli_fail("index", "standard output: %s",
                               errno ? strerror(errno) : "write error");
    } else if (sl_cli_out_close(&o, "index")) {
        return 1;
    }
    if (!to_stdout) fprintf(stderr, "wrote the index of %lld records to %s\n", (long long)n, out);
    return 0;
}
