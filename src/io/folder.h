/* SPDX-License-Identifier: Apache-2.0 */
/* Image folders as DALI's readers.file sees them: a root with one sub-folder per class (classes
 * sorted by name, label = index, files sorted, only image extensions), or a file list of
 * "relative/path label" lines, or explicit files with labels. Record keys are the paths relative to
 * the root; file contents are read on demand. */
#ifndef SLUICE_IO_FOLDER_H
#define SLUICE_IO_FOLDER_H

#include "sluice/status.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sl__folder sl__folder;

/* Exactly one source: list (a file list; paths relative to root, or to the list's folder when root
 * is NULL), nfiles files (labels: nlabels values, or none for 0..nfiles-1), or root alone. */
sl_status sl__folder_open(const char *root, const char *list, int nfiles, const char *const *files,
                          int nlabels, const int64_t *labels, sl__folder **out, sl_err *err);
/* Files without labels (readers.numpy): list (a file of paths, one per line, relative to root or to
 * the list's folder), nfiles files, or every file in root and its sub-folders whose name matches
 * the glob filter (sorted by relative path). Labels are all 0. */
sl_status sl__folder_open_files(const char *root, const char *list, int nfiles,
                                const char *const *files, const char *filter, sl__folder **out,
                                sl_err *err);
int64_t sl__folder_count(const sl__folder *f);
const char *sl__folder_name(const sl__folder *f, int64_t i); /* relative path */
int32_t sl__folder_label(const sl__folder *f, int64_t i);
const char *sl__folder_root(const sl__folder *f);
/* File i's path (the root joined with its relative path) into p. */
void sl__folder_path(const sl__folder *f, int64_t i, char *p, size_t size);
/* Number of classes (sub-folders) in class-folder mode, else 1 + the largest label. */
int sl__folder_classes(const sl__folder *f);
/* Class c's name (its sub-folder) in class-folder mode; NULL otherwise or out of range. */
const char *sl__folder_class_name(const sl__folder *f, int c);
/* Shuffles the entry order once (seeded); DALI's readers.file does so when random_shuffle is set.
 */
void sl__folder_shuffle(sl__folder *f, uint64_t seed);
/* The size of file i in bytes, from the file system now (a regular file, else an error). */
sl_status sl__folder_size(const sl__folder *f, int64_t i, size_t *size, sl_err *err);
/* Reads file i, of size bytes (sl__folder_size's answer), into dst. A file that is gone, shorter
 * or longer by now is an error naming its path. Thread-safe: one call per file, in parallel. */
sl_status sl__folder_read_into(const sl__folder *f, int64_t i, uint8_t *dst, size_t size,
                               sl_err *err);
/* Both of the above: file i into *buf (grown as needed, capacity *cap); *size its length. */
sl_status sl__folder_read(const sl__folder *f, int64_t i, uint8_t **buf, size_t *cap, size_t *size,
                          sl_err *err);
void sl__folder_close(sl__folder *f);

#ifdef __cplusplus
}
#endif
#endif
