/* SPDX-License-Identifier: Apache-2.0 */
/* sluice convert: writes LMDBs as DALI's Caffe2 / Caffe readers expect them, or a TFRecord file
 * of tf.train.Example records in TensorFlow's image-classification layout (image/encoded bytes,
 * image/class/label int64) as readers.tfrecord reads it, from IDX files
 * (MNIST / Fashion-MNIST, plain or gzip; images JPEG-encoded by libjpeg at --quality, grayscale for
 * one channel, or stored raw with --raw) or from image folders (class sub-folders, files stored
 * as they are). IDX records are keyed by their input order, zero-padded (at least 8 digits); folder
 * records by their path relative to the folder ("class/file.jpg"), so they lie in path order (LMDB
 * sorts its keys; each record carries its own label), and the class names go, one a line in label
 * order, to labels.txt beside data.mdb (not into the LMDB: the readers take every key there for a
 * record). The conversion is the library's sl_dataset_convert (sluice/dataset.h); this file
 * reads the options and reports.
 */
#include "cli.h"
#include "common.h"

#include "sluice/dataset.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(FILE *f) {
    fprintf(f,
            "usage: sluice convert --from idx --images FILE --labels FILE "
            "--to caffe2|caffe|tfrecord --out PATH [--quality Q] [--raw]\n"
            "       sluice convert --from folder --in DIR --to caffe2|caffe|tfrecord --out PATH\n"
            "Writes an LMDB (folder PATH) of Caffe2 TensorProtos (image STRING + label INT32)\n"
            "or Caffe Datum records, or a TFRecord file PATH of tf.train.Examples\n"
            "(image/encoded, image/class/label) as readers.tfrecord reads them. IDX records\n"
            "are keyed by input order (zero-padded), folder records by their relative path\n"
            "(class/file), with the class names, in label order, written to PATH/labels.txt\n"
            "(PATH.labels.txt beside a TFRecord file). --quality: JPEG quality (default 95); --raw "
            "(LMDBs only): store\n"
            "pixels (Caffe2 BYTE with dims H,W,C / Datum encoded=false).\n"
            "On a terminal a progress line counts the records (SLUICE_NO_PROGRESS=1: none).\n");
    return f == stdout ? 0 : 2;
}

static void progress(long long done, long long total, void *user) {
    (void)user;
    sl_cli_progress_of("convert", "records", done, total);
}

int sl_cli_convert(int argc, char **argv) {
    const char *from = NULL, *images = NULL, *labels = NULL, *to = NULL, *out = NULL, *in = NULL;
    int quality = 95;
    bool raw = false, quality_given = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **slot = !strcmp(a, "--from")     ? &from
                            : !strcmp(a, "--images") ? &images
                            : !strcmp(a, "--labels") ? &labels
                            : !strcmp(a, "--to")     ? &to
                            : !strcmp(a, "--out")    ? &out
                            : !strcmp(a, "--in")     ? &in
                                                     : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) return usage(stdout);
        if (!strcmp(a, "--raw")) {
            raw = true;
        } else if (!strcmp(a, "--quality") && i + 1 < argc) {
            long long q;
            if (sl_cli_opt_int("convert", a, argv[++i], 1, 100, &q)) return 1;
            quality = (int)q;
            quality_given = true;
        } else if (slot && i + 1 < argc) {
            *slot = argv[++i];
        } else {
            fprintf(stderr, "sluice convert: unknown or incomplete option '%s'\n", a);
            return usage(stderr);
        }
    }
    if (!from || !to || !out) {
        char missing[128] = "";
        if (!from) strcat(missing, " --from idx|folder");
        if (!to) strcat(missing, " --to caffe2|caffe|tfrecord");
        if (!out) strcat(missing, " --out PATH");
        fprintf(stderr,
                "sluice convert: missing%s (--from idx takes --images FILE --labels FILE, "
                "--from folder takes --in DIR; see sluice convert --help)\n",
                missing);
        return 2;
    }
    bool tf = !strcmp(to, "tfrecord");
    if (strcmp(to, "caffe2") && strcmp(to, "caffe") && !tf)
        return sl_cli_fail("convert", "--to must be caffe2, caffe or tfrecord, not '%s'", to);
    if (tf && raw)
        return sl_cli_fail("convert", "--raw is for the LMDBs: --to tfrecord stores encoded "
                                      "images (image/encoded), as TensorFlow's layout");
    bool idx = !strcmp(from, "idx");
    if (!idx && strcmp(from, "folder"))
        return sl_cli_fail("convert", "--from must be idx or folder, not '%s'", from);
    if (idx && (!images || !labels))
        return sl_cli_fail("convert", "--from idx needs --images and --labels");
    if (!idx && !in) return sl_cli_fail("convert", "--from folder needs --in DIR");
    if (!idx && raw)
        return sl_cli_fail("convert", "--raw needs decoded pixels: only with --from idx");
    /* what the other source takes would be ignored */
    if (!idx && (images || labels))
        return sl_cli_fail("convert", "%s is for --from idx; --from folder reads --in DIR",
                           images ? "--images" : "--labels");
    if (!idx && quality_given)
        return sl_cli_fail("convert", "--quality is for --from idx: --from folder stores the "
                                      "files as they are, not re-encoded");
    if (idx && in)
        return sl_cli_fail("convert", "--in is for --from folder; --from idx reads --images "
                                      "FILE --labels FILE");
    if (idx && raw && quality_given)
        return sl_cli_fail("convert", "--quality is for JPEG records; --raw stores pixels");

    sl_dataset_convert_options o = {.from = idx ? SL_DATASET_FROM_IDX : SL_DATASET_FROM_FOLDER,
                                    .images = images,
                                    .labels = labels,
                                    .folder = in,
                                    .out = out,
                                    .quality = quality,
                                    .raw = raw,
                                    .progress = progress};
    sl_dataset_convert_result r;
    sl_err e = {0};
    if (sl_dataset_format_parse(to, &o.to, &e) || sl_dataset_convert(&o, &r, &e))
        return sl_cli_fail("convert", "%s", e.msg);
    printf("wrote %lld %s records to %s\n", r.records, to, out);
    if (!idx) printf("wrote %d class names to %s\n", r.classes, r.labels_path);
    return 0;
}
