/* SPDX-License-Identifier: Apache-2.0 */
/* NVIDIA NeMo ASR manifests: JSON Lines files, one flat object per line with "audio_filepath"
 * (required; relative paths are relative to the manifest's folder), "duration" and "offset"
 * (seconds, optional) and "text" (optional; "" when absent); other fields are skipped. Parsed by
 * a small JSON reader of its own (strings with every escape, numbers, true/false/null, nested
 * values skipped). Entries whose duration is under min_duration, or over max_duration when that
 * is > 0, are left out (they need a duration then). Errors name the manifest and the line. */
#ifndef SLUICE_IO_NEMO_H
#define SLUICE_IO_NEMO_H

#include "sluice/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sl__nemo_entry {
    char *name; /* audio_filepath as written */
    char *path; /* resolved against the manifest's folder */
    char *text; /* UTF-8, text_len bytes (and a NUL) */
    size_t text_len;
    double duration, offset; /* seconds; -1 when absent */
    int64_t line;            /* 1-based, in its manifest */
    int manifest;            /* index into the manifests given */
} sl__nemo_entry;

typedef struct sl__nemo sl__nemo;

/* Parses one line (len bytes, no newline needed) into e (its strings malloc'd; free them with
 * sl__nemo_entry_clear). SL_EOF for a line of only white space. Errors say what is wrong. */
sl_status sl__nemo_parse_line(const char *line, size_t len, sl__nemo_entry *e, sl_err *err);
void sl__nemo_entry_clear(sl__nemo_entry *e);

/* Reads the manifests, keeping the entries whose duration passes the filters. */
sl_status sl__nemo_open(int n, const char *const *manifests, double min_duration,
                        double max_duration, sl__nemo **out, sl_err *err);
/* Parses manifest text already in memory (name: for messages and relative paths). */
sl_status sl__nemo_open_text(const char *name, const char *text, size_t len, double min_duration,
                             double max_duration, sl__nemo **out, sl_err *err);
int64_t sl__nemo_count(const sl__nemo *m);
int64_t sl__nemo_skipped(const sl__nemo *m); /* left out by the duration filters */
const sl__nemo_entry *sl__nemo_get(const sl__nemo *m, int64_t i);
const char *sl__nemo_manifest(const sl__nemo *m, int64_t i); /* the manifest entry i came from */
void sl__nemo_close(sl__nemo *m);

#ifdef __cplusplus
}
#endif
#endif
