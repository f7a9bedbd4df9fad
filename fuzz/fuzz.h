/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the fuzz harnesses: each defines LLVMFuzzerTestOneInput over one entry point that a
 * file or a user's text reaches, calling the library's own code. Built with clang's libFuzzer
 * (make fuzz) or, in every build, with replay.c as a program that runs saved inputs (ctest). */
#ifndef SLUICE_FUZZ_H
#define SLUICE_FUZZ_H

#include "sluice/iterator.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Writes data to a fresh file under a per-process temporary folder; returns its path (static,
 * valid until the next call), or NULL. name: the file's name ("data.mdb", "x.tar"). */
const char *fuzz_write_file(const char *name, const uint8_t *data, size_t size);
/* The folder fuzz_write_file writes into. */
const char *fuzz_dir(void);

/* Builds pipeline text (function p) with batches of batch_size on one thread and runs up to
 * `batches` batches; an error at any point ends it (FUZZ_VERBOSE=1 prints it, under `what`). */
void fuzz_run_text(const char *text, int batch_size, int batches, const char *what);

/* The iterator the checkpoint harnesses restore into, over fixtures/caffe2-fmnist-256, on ndev
 * CPU devices in DALI's order or (global) in global order; the seed checkpoints (seeds.c) are
 * taken from the same pipeline (the global one on another device count, so that restoring it
 * takes the elastic path). */
void fuzz_checkpoint_config(sl_iter_config *c, const char *fixtures, int global, int ndev);

#endif
