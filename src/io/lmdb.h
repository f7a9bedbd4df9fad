/* SPDX-License-Identifier: Apache-2.0 */
/* LMDB record stores: one or more LMDB environments opened read-only and mapped
 * (MDB_RDONLY | MDB_NOTLS | MDB_NOLOCK, as DALI), concatenated in the given order, with an index of
 * (key, value) pointers into read-only maps of the files built once at open (24 bytes per record)
 * so that record i is found in O(1) and returned as a zero-copy view; and a writer that builds an
 * LMDB in key order. */
#ifndef SLUICE_IO_LMDB_H
#define SLUICE_IO_LMDB_H

#include "sluice/status.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sl__lmdb sl__lmdb;

/* paths: LMDB folders (holding data.mdb) or data.mdb files. Nothing in a store is trusted: the
 * meta pages are checked against the file's size before it is mapped, and the index is built by a
 * walk of the B-tree whose every page number, offset and size is bounded by the file (each page
 * read once), so a truncated or damaged store is an SL_EFORMAT naming the path, not a signal.
 * An empty store opens with 0 records. Errors name the path. */
sl_status sl__lmdb_open(int npaths, const char *const *paths, sl__lmdb **out, sl_err *err);
int64_t sl__lmdb_count(const sl__lmdb *db);
/* Record i's value: a view into the map, valid until close. */
void sl__lmdb_value(const sl__lmdb *db, int64_t i, const uint8_t **data, size_t *size);
/* Record i's key as printable text (bytes outside 0x20..0x7e, and '\\', as \xHH) into buf
 * (truncated to size); returns buf. */
const char *sl__lmdb_key(const sl__lmdb *db, int64_t i, char *buf, size_t size);
/* Hints that records will be read soon (a batch's worth, picked at random across the map, each
 * a wait on memory when read one by one): stage 0 fetches their index entries, stage 1 (after
 * stage 0 for the same records) their keys and the first and last bytes of their values. */
void sl__lmdb_prefetch(const sl__lmdb *db, const int64_t *recs, int n, int stage);
/* The path record i comes from. */
const char *sl__lmdb_path(const sl__lmdb *db, int64_t i);
/* Bytes of index memory (for benchmarks). */
size_t sl__lmdb_index_bytes(const sl__lmdb *db);
void sl__lmdb_close(sl__lmdb *db);

/* Writes binary bytes as printable key text (see sl__lmdb_key). */
const char *sl__lmdb_escape(const void *bytes, size_t n, char *buf, size_t size);

/* ---- writing ---- */
typedef struct sl__lmdb_writer sl__lmdb_writer;
/* Creates dir (if missing) and a new LMDB in it, with no lock file (one writer, no readers while
 * it writes); fails if dir already holds a data.mdb. A write that fails for want of space says
 * "no space left on device". */
sl_status sl__lmdb_writer_open(const char *dir, sl__lmdb_writer **out, sl_err *err);
/* Keys must come in increasing byte order (appends); commits every few thousand records. */
sl_status sl__lmdb_writer_put(sl__lmdb_writer *w, const void *key, size_t klen, const void *val,
                              size_t vlen, sl_err *err);
/* Commits, syncs the file to the disk and closes; w is freed either way. */
sl_status sl__lmdb_writer_close(sl__lmdb_writer *w, sl_err *err);
/* Drops the open transaction and closes, after an error; NULL does nothing. */
void sl__lmdb_writer_abort(sl__lmdb_writer *w);

#ifdef __cplusplus
}
#endif
#endif
