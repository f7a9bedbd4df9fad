/* SPDX-License-Identifier: Apache-2.0 */
/* A regular file mapped read-only, for the readers of sequential files (tar, TFRecord). */
#ifndef SLUICE_IO_MAPFILE_H
#define SLUICE_IO_MAPFILE_H

#include "sluice/status.h"

#include <stddef.h>
#include <stdint.h>

/* Maps path (an empty file: *map NULL, *size 0); SL_ENOENT / SL_EIO naming it. */
sl_status sl__mapfile_map(const char *path, const uint8_t **map, size_t *size, sl_err *err);
void sl__mapfile_unmap(const uint8_t *map, size_t size);

#endif
