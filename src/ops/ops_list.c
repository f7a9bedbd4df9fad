/* The image and generic operators, listed for the op table. */
#include "ops/op.h"

#include <stddef.h>

const sl__op_def *const sl__image_ops[] = {NULL};
