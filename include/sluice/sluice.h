/* SPDX-License-Identifier: Apache-2.0 */
/* sluice: feeds training data to many GPUs fast, and trains data-parallel on them.
 * The umbrella header: include this one, or the parts you use. */
#ifndef SLUICE_H
#define SLUICE_H

#include "sluice/version.h"

#include "sluice/status.h"
#include "sluice/tensor.h"

#endif
