/* SPDX-License-Identifier: Apache-2.0 */
/* The spatial axes of a convolution op's input (ops/conv_axes.h): DALI's rule for its
 * convolution ops (gaussian_blur, laplacian), with its messages, which its users' tests match,
 * after our own. */
#include "ops/conv_axes.h"

#include "sluice/tensor.h"

#include <stdio.h>
#include <string.h>

sl_status sl__conv_axes(const char *op, const char *layout, int ndim, bool seq, int max, int *first,
                        int *count, sl_err *err) {
    /* frames of a sequence: errors name the sequence's layout */
    char shown[SL_MAX_DIMS + 2];
    snprintf(shown, sizeof shown, "%s%s", seq ? "F" : "", layout);
    if (!layout[0]) {
        if (ndim < 1 || ndim > max)
            return sl_err_set(err, SL_EINVAL,
                              "%s: a layout-less input is all spatial axes: 1 to %d dims, not %d "
                              "(give the layout, e.g. \"HWC\")",
                              op, max, ndim);
        *first = 0, *count = ndim;
        return SL_OK;
    }
    int len = (int)strlen(layout);
    if (len != ndim)
        return sl_err_set(err, SL_EINVAL, "%s: layout \"%s\" for %d dims", op, shown, ndim + seq);
    int lo = 0, hi = len;
    if (layout[len - 1] == 'C') hi--;
    while (lo < hi && (layout[lo] == 'C' || layout[lo] == 'F')) lo++;
    if (lo > 2 || (lo == 2 && layout[0] == layout[1]))
        return sl_err_set(err, SL_EINVAL,
                          "%s: layout \"%s\": more than two leading 'F' or 'C' dimensions: "
                          "Found more the one occurrence of 'F' or 'C' axes in layout: %s.",
                          op, shown, shown);
    for (int k = lo; k < hi; k++)
        if (layout[k] == 'F')
            return sl_err_set(err, SL_EINVAL,
                              "%s: layout \"%s\": 'F' between the spatial axes (frames go "
                              "first): For sequences, layout should begin with 'F' or 'C', "
                              "got: %s.",
                              op, shown, shown);
        else if (layout[k] == 'C')
            return sl_err_set(err, SL_EINVAL,
                              "%s: layout \"%s\": 'C' between the spatial axes (channels go "
                              "first or last): Only channel-first or channel-last layouts are "
                              "supported, got: %s.",
                              op, shown, shown);
    if (hi - lo > max)
        return sl_err_set(err, SL_EINVAL,
                          "%s: layout \"%s\" has %d spatial axes (1 to %d): Too many dimensions, "
                          "found: %d data axes, maximum supported is: %d.",
                          op, shown, hi - lo, max, hi - lo, max);
    if (hi - lo < 1)
        return sl_err_set(err, SL_EINVAL,
                          "%s: layout \"%s\" has no spatial axes (1 to %d): No spatial axes found "
                          "in the layout: %s.",
                          op, shown, max, shown);
    *first = lo, *count = hi - lo;
    return SL_OK;
}
