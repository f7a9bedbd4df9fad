/* SPDX-License-Identifier: Apache-2.0 */
/* The checkpoint harness in global order: checkpoints of a 4-device run restored on 2 devices (the
 * elastic path: the shape's device count differs, the pipelines' states are shared out). */
#define FUZZ_GLOBAL_ORDER 1
#include "fuzz_checkpoint.c"
