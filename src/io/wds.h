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

/* Maps and indexes the tar files; a malformed one is an SL_EFORMAT naming it and the offset.
 * index_paths (NULL, or one per file, NULL for none): DALI's wds2idx index of each file, which then
 * says how its members form samples; every line is checked against the tar (the member at each
 * offset, its size, extension and, in version 1.2, its name), and a malformed line or one that
 * does not match is an SL_EFORMAT naming the index file and line ("train.idx:3: ..."). */
sl_status sl__wds_open(int npaths, const char *const *paths, const char *const *index_paths,
                       sl__wds **out, sl_err *err);
/* Sample i's members: how many, and member k's path in the tar, its extension and its data's
 * offset in the file and size. */
int32_t sl__wds_members(const sl__wds *w, int64_t i);
void sl__wds_member(const sl__wds *w, int64_t i, int32_t k, const char **name, const char **ext,
                    size_t *off, size_t *len);
void sl__wds_close(sl__wds *w);
int64_t sl__wds_count(const sl__wds *w);
const char *sl__wds_key(const sl__wds *w, int64_t i);
const char *sl__wds_path(const sl__wds *w, int64_t i); /* the tar file sample i is in */
/* Sample i's member with one of the extensions in exts (separated by ';', the first found wins),
 * as a view into the map; false when it has none. */
bool sl__wds_find(const sl__wds *w, int64_t i, const char *exts, bool case_sensitive,
                  const uint8_t **data, size_t *len);
/* DALI's source info of sample i's member with one of exts (as sl__wds_find picks it): "TAR:OFFSET:
 * NAME", the tar file as given, its data's offset in it and its path in the tar; "" when it has
 * none. */
void sl__wds_source_info(const sl__wds *w, int64_t i, const char *exts, bool case_sensitive,
                         char *buf, size_t n);
/* Keeps only the samples for which keep(i) is true (missing_component_behavior="skip"). */
void sl__wds_filter(sl__wds *w, bool (*keep)(const sl__wds *w, int64_t i, void *user), void *user);

#ifdef __cplusplus
}
#endif
#endif
