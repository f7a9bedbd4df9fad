/* SPDX-License-Identifier: Apache-2.0 */
/* sluice wds2idx: writes the index of a WebDataset tar file in DALI's format (that of DALI's
 * wds2idx script, version 1.2: "v1.2 COUNT", then per sample "ext offset size name" for each of
 * its members), the index_paths files readers.webdataset takes, from the library's sl_wds_index
 * (sluice/dataset.h). The command line is wds2idx's: ARCHIVE [INDEX], INDEX by default ARCHIVE's
 * path up to the first '.' of its file name (after its first character), then ".idx". INDEX is
 * written beside itself and renamed into place once whole. */
#include "cli.h"
#include "common.h"

#include "sluice/dataset.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(FILE *f) {
    fprintf(f,
            "usage: sluice wds2idx ARCHIVE.tar [INDEX]\n"
            "Writes the index of the WebDataset tar file ARCHIVE (DALI's wds2idx format,\n"
            "readers.webdataset's index_paths) to INDEX; without INDEX, to ARCHIVE's path up\n"
            "to the first '.' of its file name, then \".idx\" (data/train.tar: data/train.idx).\n"
            "The Python package installs the same command as `wds2idx`.\n");
    return f == stdout ? 0 : 2;
}

int sl_cli_wds2idx(int argc, char **argv) {
    const char *in, *out;
    int rc = sl_cli_in_out(argc, argv, "wds2idx", "one tar file and one index", usage, &in, &out);
    if (rc >= 0) return rc;
    char def[4096];
    if (!out) { /* as wds2idx: up to the first '.' after the file name's first character */
        const char *slash = strrchr(in, '/'), *base = slash ? slash + 1 : in;
        const char *dot = base[0] ? strchr(base + 1, '.') : NULL;
        int n = dot ? (int)(dot - in) : (int)strlen(in);
        if (snprintf(def, sizeof def, "%.*s.idx", n, in) >= (int)sizeof def)
            return sl_cli_fail("wds2idx", "%s: path too long", in);
        out = def;
    }
    sl_err e = {0};
    char *text;
    size_t len;
    int64_t n;
    if (sl_wds_index(in, &text, &len, &n, &e)) return sl_cli_fail("wds2idx", "%s", e.msg);
    sl_cli_out o = {0};
    if (sl_cli_out_open(&o, "wds2idx", out, false)) {
        free(text);
        return 1;
    }
    fwrite(text, 1, len, o.f);
    free(text);
    if (sl_cli_out_close(&o, "wds2idx")) return 1;
    fprintf(stderr, "wrote the index of %lld samples to %s\n", (long long)n, out);
    return 0;
}
