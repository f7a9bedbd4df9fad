/* SPDX-License-Identifier: Apache-2.0 */
/* readers.coco's pixel-wise masks (coco.h, sl__coco_mask). Each polygon is rasterised as COCO's
 * own tools do it (and so DALI, which calls them): the outline walked on a grid five times finer
 * than the pixels, the points where it crosses a pixel column's centre kept, and the pixels of
 * each column between such crossings filled, column by column as COCO's run-length encodings
 * run. A label's mask is the union of its objects' polygons and RLE masks; labels are painted in
 * increasing order, so where masks of two labels overlap the larger wins. */
#include "io/coco_int.h"

#include "core/alloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SCALE      5.0
#define MAX_COORD  2.0e8       /* |x| * SCALE stays within int */
#define MAX_POINTS (1LL << 26) /* points on one polygon's outline (on the fine grid) */

typedef struct runs {
    int64_t *a; /* column-major positions x * h + y where the mask switches */
    int64_t n, cap;
} runs;

static bool push(runs *r, int64_t v) {
    if (r->n == r->cap) {
        int64_t c = r->cap ? r->cap * 2 : 256;
        int64_t *p = realloc(r->a, (size_t)c * sizeof *p);
        if (!p) return false;
        r->a = p;
        r->cap = c;
    }
    r->a[r->n++] = v;
    return true;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* the outline point (u, v) after (pu, pv) on the fine grid: where u moved onto the centre of a
 * pixel column inside the image, the first pixel of that column below the outline */
static bool crossing(runs *r, int u, int v, int pu, int pv, int64_t h, int64_t w) {
    double xd = (double)(u < pu ? u : u - 1);
    xd = (xd + .5) / SCALE - .5;
    if (floor(xd) != xd || xd < 0 || xd > (double)(w - 1)) return true;
    double yd = (double)(v < pv ? v : pv);
    yd = (yd + .5) / SCALE - .5;
    if (yd < 0)
        yd = 0;
    else if (yd > (double)h)
        yd = (double)h;
    yd = ceil(yd);
    return push(r, (int64_t)xd * h + (int64_t)yd);
}

/* the polygon of k vertices xy (k, 2) ORed into m (h, w) row-major bytes */
static sl_status fill_polygon(const float *xy, int64_t k, int64_t h, int64_t w, uint8_t *m,
                              sl_err *err) {
    if (k == 0) return SL_OK;
    int64_t points = 0;
    for (int64_t j = 0; j < 2 * k; j++)
        if (!(fabs((double)xy[j]) <= MAX_COORD))
            return sl_err_set(err, SL_EFORMAT,
                              "a polygon's vertex (%g) lies too far outside the "
                              "image to rasterise",
                              (double)xy[j]);
            /* the vertices on the fine grid, rounded as COCO's tools do (a cast: towards zero) */
#define GX(j) ((int)(SCALE * (double)xy[2 * ((j) % k)] + .5))
#define GY(j) ((int)(SCALE * (double)xy[2 * ((j) % k) + 1] + .5))
    for (int64_t j = 0; j < k; j++) {
        int64_t dx = llabs((long long)GX(j + 1) - GX(j)), dy = llabs((long long)GY(j + 1) - GY(j));
        points += (dx > dy ? dx : dy) + 1;
    }
    if (points > MAX_POINTS)
        return sl_err_set(err, SL_EFORMAT,
                          "a polygon's outline is %lld points long on the rasterising grid, "
                          "more than %lld",
                          (long long)points, (long long)MAX_POINTS);
    runs r = {NULL, 0, 0};
    bool ok = true, have = false;
    int pu = 0, pv = 0;
    for (int64_t j = 0; ok && j < k; j++) {
        int xs = GX(j), xe = GX(j + 1), ys = GY(j), ye = GY(j + 1);
        int dx = abs(xe - xs), dy = abs(ys - ye), t;
        bool flip = (dx >= dy && xs > xe) || (dx < dy && ys > ye);
        if (flip) {
            t = xs, xs = xe, xe = t;
            t = ys, ys = ye, ye = t;
        }
        int len = dx >= dy ? dx : dy;
        /* a zero-length edge: COCO's slope is 0/0, and x86 turns the NaN it rounds into INT_MIN */
        double s = len == 0 ? 0 : dx >= dy ? (double)(ye - ys) / dx : (double)(xe - xs) / dy;
        for (int d = 0; ok && d <= len; d++) {
            t = flip ? len - d : d;
            int u, v;
            if (dx >= dy) {
                u = t + xs;
                v = len == 0 ? INT32_MIN : (int)(ys + s * t + .5);
            } else {
                v = t + ys;
                u = (int)(xs + s * t + .5);
            }
            if (have && u != pu) ok = crossing(&r, u, v, pu, pv, h, w);
            pu = u, pv = v, have = true;
        }
    }
#undef GX
#undef GY
    if (!ok || !push(&r, h * w)) {
        free(r.a);
        return sl_err_set(err, SL_ENOMEM, "out of memory rasterising a polygon");
    }
    /* runs between the sorted switch positions, alternately outside and inside; an empty run
     * joins its two neighbours (COCO's rule) */
    qsort(r.a, (size_t)r.n, sizeof *r.a, cmp_i64);
    int64_t prev = 0, nb = 0;
    for (int64_t j = 0; j < r.n; j++) {
        int64_t t2 = r.a[j];
        r.a[j] -= prev;
        prev = t2;
    }
    int64_t *b = r.a; /* in place: the merged runs never outrun the differences */
    int64_t j = 0;
    b[nb++] = r.a[j++];
    while (j < r.n) {
        if (r.a[j] > 0) {
            b[nb++] = r.a[j++];
        } else {
            j++;
            if (j < r.n) b[nb - 1] += r.a[j++];
        }
    }
    int64_t pos = 0;
    for (int64_t q = 0; q < nb; q++) {
        if (q % 2)
            for (int64_t p = pos; p < pos + b[q] && p < h * w; p++) m[(p % h) * w + p / h] = 1;
        pos += b[q];
    }
    free(r.a);
    return SL_OK;
}

/* the RLE r (column-major counts, starting outside) ORed into m (h, w) row-major bytes */
static void fill_rle(const sl__coco *c, const sl__coco_rle *r, int64_t h, int64_t w, uint8_t *m) {
    int64_t pos = 0;
    for (int64_t q = 0; q < r->m; q++) {
        int64_t n = c->cnts[r->first + q];
        if (q % 2)
            for (int64_t p = pos; p < pos + n && p < h * w; p++) m[(p % h) * w + p / h] = 1;
        pos += n;
    }
}

static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

sl_status sl__coco_mask(const sl__coco *c, int64_t i, int32_t *out, sl_err *err) {
    const sl__coco_image *im = &c->img[i];
    int64_t h = (int64_t)im->h, w = (int64_t)im->w;
    memset(out, 0, (size_t)(h * w) * sizeof *out);
    if (im->n == 0 || h * w == 0) return SL_OK;
    int32_t *labels = sl__malloc((size_t)im->n * sizeof *labels, err);
    uint8_t *m = sl__malloc((size_t)(h * w), err);
    if (!labels || !m) {
        free(labels);
        free(m);
        return SL_ENOMEM;
    }
    const int32_t *lab = c->labels + im->first;
    memcpy(labels, lab, (size_t)im->n * sizeof *labels);
    qsort(labels, (size_t)im->n, sizeof *labels, cmp_i32);
    const float *verts = (c->verts_px ? c->verts_px : c->verts) + 2 * im->vfirst;
    sl_status st = SL_OK;
    for (int64_t k = 0; !st && k < im->n; k++) {
        if (k > 0 && labels[k] == labels[k - 1]) continue;
        int32_t L = labels[k];
        bool any = false;
        memset(m, 0, (size_t)(h * w));
        for (int64_t p = im->pfirst; !st && p < im->pfirst + im->pn; p++) {
            const int32_t *q = c->polys + 3 * p;
            if (lab[q[0]] != L) continue;
            st = fill_polygon(verts + 2 * q[1], q[2] - q[1], h, w, m, err);
            if (st)
                st = sl_err_prefix(err, "object %d (polygon %lld): ", q[0],
                                   (long long)(p - im->pfirst));
            any = true;
        }
        for (int64_t r = im->rfirst; r < im->rfirst + im->rn; r++)
            if (lab[c->rles[r].mask] == L) {
                fill_rle(c, &c->rles[r], h, w, m);
                any = true;
            }
        if (any)
            for (int64_t p = 0; p < h * w; p++)
                if (m[p]) out[p] = L;
    }
    free(labels);
    free(m);
    return st;
}
