/* SPDX-License-Identifier: Apache-2.0 */
/* sluice: feeds training data to many GPUs fast, and trains data-parallel on them.
 * The umbrella header: include this one, or the parts you use. */
#ifndef SLUICE_H
#define SLUICE_H

#define SLUICE_VERSION_MAJOR  0
#define SLUICE_VERSION_MINOR  1
#define SLUICE_VERSION_PATCH  0
#define SLUICE_VERSION_STRING "0.1.0"

#include "sluice/status.h"
#include "sluice/tensor.h"

#endif
