/* SPDX-License-Identifier: Apache-2.0 */
/* WebDataset shards: tar files (POSIX ustar, GNU long names, PAX path records) mapped read-only;
 * their regular members grouped into samples by key -- the member's path up to the first '.' of
 * its file name, the rest being the extension ("a/b.seg.png": key "a/b", extension "seg.png") --
 * where consecutive members of one file share a key, as WebDataset writes them. */
#ifndef SLUICE_IO_WDS_H
#define SLUICE_IO_WDS_H

#include "sluice/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sl__wds sl__wds;

/* Maps and indexes the tar files; a malformed one is an SL_EFORMAT naming it and the offset. */
sl_status sl__wds_open(int npaths, const char *const *paths, sl__wds **out, sl_err *err);
void sl__wds_close(sl__wds *w);
int64_t sl__wds_count(const sl__wds *w);
const char *sl__wds_key(const sl__wds *w, int64_t i);
const char *sl__wds_path(const sl__wds *w, int64_t i); /* the tar file sample i is in */
/* Sample i's member with one of the extensions in exts (separated by ';', the first found wins),
 * as a view into the map; false when it has none. */
bool sl__wds_find(const sl__wds *w, int64_t i, const char *exts, bool case_sensitive,
                  const uint8_t **data, size_t *len);
/* Keeps only the samples for which keep(i) is true (missing_component_behavior="skip"). */
void sl__wds_filter(sl__wds *w, bool (*keep)(const sl__wds *w, int64_t i, void *user), void *user);

#ifdef __cplusplus
}
#endif
#endif
