/* SPDX-License-Identifier: Apache-2.0 */
/* COCO annotation files (see coco.h): cJSON's tree walked once into flat arrays (images sorted by
 * id, their boxes and labels), every field checked on the way. */
#include "io/coco_int.h"

#include "core/alloc.h"
#include "core/log.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifdef SLUICE_HAVE_CJSON
#include <cjson/cJSON.h>
#endif

typedef sl__coco_image image;

void sl__coco_close(sl__coco *c) {
    if (!c) return;
    for (int64_t i = 0; i < c->n; i++) free(c->img[i].file);
    free(c->img);
    free(c->boxes);
    free(c->labels);
    free(c->polys);
    free(c->verts);
    free(c->verts_px);
    free(c->rles);
    free(c->cnts);
    free(c);
}

int64_t sl__coco_count(const sl__coco *c) {
    return c->n;
}
const char *sl__coco_file(const sl__coco *c, int64_t i) {
    return c->img[i].file;
}
int32_t sl__coco_image_id(const sl__coco *c, int64_t i) {
    return c->img[i].id;
}
int64_t sl__coco_boxes(const sl__coco *c, int64_t i, const float **boxes, const int32_t **labels) {
    *boxes = c->boxes + c->img[i].first * 4;
    *labels = c->labels + c->img[i].first;
    return c->img[i].n;
}

int64_t sl__coco_polygons(const sl__coco *c, int64_t i, const int32_t **polys) {
    *polys = c->polys ? c->polys + c->img[i].pfirst * 3 : NULL;
    return c->img[i].pn;
}
int64_t sl__coco_vertices(const sl__coco *c, int64_t i, const float **verts) {
    *verts = c->verts ? c->verts + c->img[i].vfirst * 2 : NULL;
    return c->img[i].vn;
}
void sl__coco_size(const sl__coco *c, int64_t i, int64_t *h, int64_t *w) {
    *h = (int64_t)c->img[i].h;
    *w = (int64_t)c->img[i].w;
}

sl_status sl__coco_open(const char *path, const sl__coco_opts *o, sl__coco **out, sl_err *err) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return sl_err_set(err, SL_EIO, "%s: %s", path, strerror(errno));
    struct stat sb;
    sl_status st = SL_OK;
    if (fstat(fileno(f), &sb) != 0)
        st = sl_err_set(err, SL_EIO, "%s: %s", path, strerror(errno));
    else if (!S_ISREG(sb.st_mode))
        st = sl_err_set(err, SL_EIO, "%s: not a regular file", path);
    char *buf = NULL;
    size_t n = st ? 0 : (size_t)sb.st_size;
    if (!st) {
        buf = sl__malloc(n + 1, err);
        if (!buf) st = SL_ENOMEM;
    }
    if (!st && fread(buf, 1, n, f) != n)
        st = sl_err_set(err, SL_EIO, "%s: %s", path,
                        ferror(f) ? strerror(errno) : "the file shrank while being read");
    fclose(f);
    if (!st) st = sl__coco_parse(buf, n, path, o, out, err);
    free(buf);
    return st;
}

#ifndef SLUICE_HAVE_CJSON

sl_status sl__coco_parse(const char *json, size_t n, const char *path, const sl__coco_opts *o,
                         sl__coco **out, sl_err *err) {
    (void)json;
    (void)n;
    (void)o;
    *out = NULL;
    return sl_err_set(err, SL_ENOTSUP,
                      "%s: this sluice was built without cJSON (libcjson-dev), which COCO "
                      "annotation files need",
                      path);
}

#else

/* an integral JSON number within int32, else an error naming where and what */
static sl_status get_int(const cJSON *obj, const char *key, bool required, int32_t *v,
                         const char *path, const char *where, sl_err *err) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!x) {
        if (!required) return SL_OK;
        return sl_err_set(err, SL_EFORMAT, "%s: %s has no \"%s\"", path, where, key);
    }
    if (!cJSON_IsNumber(x))
        return sl_err_set(err, SL_EFORMAT, "%s: %s: \"%s\" is not a number", path, where, key);
    double d = x->valuedouble;
    if (!(d >= -2147483648.0 && d <= 2147483647.0) || d != floor(d))
        return sl_err_set(err, SL_EFORMAT, "%s: %s: \"%s\" is %g, not an integer within int32",
                          path, where, key, d);
    *v = (int32_t)d;
    return SL_OK;
}

/* the named member as an array (absent: *arr NULL unless required) */
static sl_status get_array(const cJSON *obj, const char *key, bool required, const cJSON **arr,
                           const char *path, const char *where, sl_err *err) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(obj, key);
    *arr = NULL;
    if (!x) {
        if (!required) return SL_OK;
        return sl_err_set(err, SL_EFORMAT, "%s: %s has no \"%s\" array", path, where, key);
    }
    if (!cJSON_IsArray(x))
        return sl_err_set(err, SL_EFORMAT, "%s: %s's \"%s\" is not an array", path, where, key);
    *arr = x;
    return SL_OK;
}

typedef struct idpair {
    int32_t id;
    int32_t val;
} idpair;

static int cmp_pair(const void *a, const void *b) {
    int32_t x = ((const idpair *)a)->id, y = ((const idpair *)b)->id;
    return (x > y) - (x < y);
}

static int cmp_image(const void *a, const void *b) {
    int32_t x = ((const image *)a)->id, y = ((const image *)b)->id;
    return (x > y) - (x < y);
}

static const idpair *find(const idpair *p, int64_t n, int32_t id) {
    idpair k = {id, 0};
    return bsearch(&k, p, (size_t)n, sizeof *p, cmp_pair);
}

/* line and column of byte offset off in json */
static void line_col(const char *json, size_t off, int64_t *line, int64_t *col) {
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < off; i++) {
        if (json[i] == '\n') {
            ++*line;
            *col = 1;
        } else {
            ++*col;
        }
    }
}

typedef struct ann {
    int64_t img; /* index into the sorted images */
    float box[4];
    int32_t label;
    int64_t pfirst, pn; /* polygons: pairs of absolute vertex indices in the segm pools */
    int64_t rle;        /* index into the segm pool's RLEs, or -1 */
} ann;

/* the segmentations of the kept annotations, in the file's order */
typedef struct segm {
    int64_t *poly; /* (npoly, 2): first and end vertex */
    int64_t npoly, cpoly;
    float *vert; /* (nvert, 2) */
    int64_t nvert, cvert;
    sl__coco_rle *rle;
    int64_t nrle, crle;
    uint32_t *cnt;
    int64_t ncnt, ccnt;
} segm;

static void segm_free(segm *g) {
    free(g->poly);
    free(g->vert);
    free(g->rle);
    free(g->cnt);
}

/* room for need more items of elem bytes in *p, holding n of cap */
static sl_status reserve(void **p, int64_t n, int64_t *cap, int64_t need, size_t elem,
                         sl_err *err) {
    if (n + need <= *cap) return SL_OK;
    int64_t c = *cap > 0 ? *cap : 16;
    while (c < n + need) c *= 2;
    void *q = realloc(*p, (size_t)c * elem);
    if (!q) return sl_err_set(err, SL_ENOMEM, "out of memory reading COCO segmentations");
    *p = q;
    *cap = c;
    return SL_OK;
}

/* one count of COCO's compressed RLE string (6 bits a character, the low 5 data, from '0'),
 * at *p; the previous counts for its delta */
static bool rle_number(const char *s, size_t *p, int64_t m, const uint32_t *cnts, int64_t *out) {
    int64_t x = 0;
    int k = 0, more = 1;
    while (more) {
        int ch = (unsigned char)s[*p];
        if (ch < 48 || ch > 111 || k > 6) return false; /* the end, or not COCO's alphabet */
        int c = ch - 48;
        x |= (int64_t)(c & 0x1f) << (5 * k);
        more = c & 0x20;
        ++*p;
        ++k;
        if (!more && (c & 0x10)) x |= (int64_t)(-1) * ((int64_t)1 << (5 * k)); /* the sign */
    }
    if (m > 2) x += cnts[m - 2];
    if (x < 0 || x > (int64_t)UINT32_MAX) return false;
    *out = x;
    return true;
}

/* an RLE segmentation (object seg) of the image im into the pool: its size must be the image's
 * and its counts (numbers, or COCO's string) must cover it exactly */
static sl_status parse_rle(const cJSON *seg, const image *im, segm *g, const char *path,
                           const char *where, sl_err *err) {
    const cJSON *size = cJSON_GetObjectItemCaseSensitive(seg, "size");
    const cJSON *counts = cJSON_GetObjectItemCaseSensitive(seg, "counts");
    const cJSON *hv =
        cJSON_IsArray(size) && cJSON_GetArraySize(size) == 2 ? cJSON_GetArrayItem(size, 0) : NULL;
    const cJSON *wv = hv ? cJSON_GetArrayItem(size, 1) : NULL;
    if (!cJSON_IsNumber(hv) || !cJSON_IsNumber(wv) || hv->valuedouble != im->h ||
        wv->valuedouble != im->w)
        return sl_err_set(err, SL_EFORMAT,
                          "%s: %s: the RLE segmentation's \"size\" is not [height, width] of its "
                          "image (%g x %g)",
                          path, where, im->h, im->w);
    int64_t total = (int64_t)im->h * (int64_t)im->w, sum = 0, m = 0;
    sl__coco_rle r = {0, (int64_t)im->h, (int64_t)im->w, g->ncnt, 0};
    if (cJSON_IsString(counts)) {
        const char *s = counts->valuestring;
        size_t len = strlen(s), p = 0;
        SL_TRY(reserve((void **)&g->cnt, g->ncnt, &g->ccnt, (int64_t)len, sizeof *g->cnt, err));
        while (p < len) {
            int64_t x;
            if (!rle_number(s, &p, m, g->cnt + r.first, &x))
                return sl_err_set(err, SL_EFORMAT,
                                  "%s: %s: the RLE segmentation's \"counts\" string is not "
                                  "COCO's encoding (at character %zu)",
                                  path, where, p);
            g->cnt[r.first + m++] = (uint32_t)x;
            sum += x;
        }
    } else if (cJSON_IsArray(counts)) {
        int64_t k = cJSON_GetArraySize(counts);
        SL_TRY(reserve((void **)&g->cnt, g->ncnt, &g->ccnt, k, sizeof *g->cnt, err));
        const cJSON *v;
        cJSON_ArrayForEach(v, counts) {
            if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) || v->valuedouble > total ||
                v->valuedouble != floor(v->valuedouble))
                return sl_err_set(err, SL_EFORMAT,
                                  "%s: %s: the RLE segmentation's \"counts\"[%lld] is not a "
                                  "count of pixels",
                                  path, where, (long long)m);
            g->cnt[r.first + m++] = (uint32_t)v->valuedouble;
            sum += (int64_t)v->valuedouble;
        }
    } else {
        return sl_err_set(err, SL_EFORMAT, "%s: %s: the RLE segmentation's \"counts\" is %s", path,
                          where, counts ? "neither a string nor an array" : "missing");
    }
    if (sum != total)
        return sl_err_set(err, SL_EFORMAT,
                          "%s: %s: the RLE segmentation's counts add up to %lld pixels, its image "
                          "has %lld",
                          path, where, (long long)sum, (long long)total);
    r.m = m;
    g->ncnt += m;
    SL_TRY(reserve((void **)&g->rle, g->nrle, &g->crle, 1, sizeof *g->rle, err));
    g->rle[g->nrle++] = r;
    return SL_OK;
}

/* the kept annotation x's "segmentation" into the pool and a: polygons (always, when asked) and
 * RLEs (with o->rles; else, as DALI, an RLE gives no polygon) */
static sl_status parse_segm(const cJSON *x, const image *im, const sl__coco_opts *o, segm *g,
                            ann *a, const char *path, const char *where, sl_err *err) {
    a->pfirst = g->npoly;
    a->pn = 0;
    a->rle = -1;
    const cJSON *seg = cJSON_GetObjectItemCaseSensitive(x, "segmentation");
    if (!seg) return SL_OK;
    if (cJSON_IsObject(seg)) {
        if (!o->rles) return SL_OK;
        a->rle = g->nrle;
        return parse_rle(seg, im, g, path, where, err);
    }
    if (!cJSON_IsArray(seg))
        return sl_err_set(err, SL_EFORMAT,
                          "%s: %s: \"segmentation\" is neither a list of polygons nor an RLE "
                          "object",
                          path, where);
    const cJSON *poly;
    int64_t k = 0;
    cJSON_ArrayForEach(poly, seg) {
        int64_t nc = cJSON_IsArray(poly) ? cJSON_GetArraySize(poly) : -1;
        if (nc < 0 || nc % 2)
            return sl_err_set(
                err, SL_EFORMAT, "%s: %s: \"segmentation\"[%lld] is %s", path, where, (long long)k,
                nc < 0 ? "not a list of coordinates" : "a list of an odd number of coordinates");
        SL_TRY(reserve((void **)&g->vert, g->nvert, &g->cvert, nc / 2, 2 * sizeof *g->vert, err));
        SL_TRY(reserve((void **)&g->poly, g->npoly, &g->cpoly, 1, 2 * sizeof *g->poly, err));
        int64_t first = g->nvert, j = 0;
        const cJSON *v;
        cJSON_ArrayForEach(v, poly) {
            if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || fabs(v->valuedouble) > 3.4e38)
                return sl_err_set(err, SL_EFORMAT,
                                  "%s: %s: \"segmentation\"[%lld][%lld] is not a finite number "
                                  "within float",
                                  path, where, (long long)k, (long long)j);
            g->vert[first * 2 + j++] = (float)v->valuedouble;
        }
        g->nvert += nc / 2;
        g->poly[2 * g->npoly] = first;
        g->poly[2 * g->npoly + 1] = g->nvert;
        g->npoly++;
        a->pn++;
        k++;
    }
    return SL_OK;
}

/* the segmentations of the kept annotations, grouped by image as the boxes (order: the object
 * each annotation became), into c's polygon, vertex and RLE arrays */
static sl_status group_segm(sl__coco *c, const ann *anns, const int64_t *order, const segm *g,
                            bool ratio, sl_err *err) {
    int64_t nv = g->nvert > 0 ? g->nvert : 1;
    c->polys = sl__malloc((size_t)(g->npoly > 0 ? g->npoly : 1) * 3 * sizeof *c->polys, err);
    c->verts = sl__malloc((size_t)nv * 2 * sizeof *c->verts, err);
    c->rles = sl__malloc((size_t)(g->nrle > 0 ? g->nrle : 1) * sizeof *c->rles, err);
    c->cnts = sl__malloc((size_t)(g->ncnt > 0 ? g->ncnt : 1) * sizeof *c->cnts, err);
    if (ratio) c->verts_px = sl__malloc((size_t)nv * 2 * sizeof *c->verts_px, err);
    if (!c->polys || !c->verts || !c->rles || !c->cnts || (ratio && !c->verts_px)) return SL_ENOMEM;
    for (int64_t i = 0; i < c->n; i++) {
        image *im = &c->img[i];
        im->pfirst = c->npoly;
        im->vfirst = c->nvert;
        im->rfirst = c->nrle;
        for (int64_t j = 0; j < im->n; j++) {
            const ann *a = &anns[order[im->first + j]];
            for (int64_t p = a->pfirst; p < a->pfirst + a->pn; p++) {
                int64_t f = g->poly[2 * p], e = g->poly[2 * p + 1];
                int32_t *q = c->polys + 3 * c->npoly++;
                q[0] = (int32_t)j;
                q[1] = (int32_t)(c->nvert - im->vfirst);
                q[2] = (int32_t)(c->nvert - im->vfirst + e - f);
                for (int64_t v = f; v < e; v++, c->nvert++) {
                    float *dst = c->verts + 2 * c->nvert;
                    dst[0] = g->vert[2 * v];
                    dst[1] = g->vert[2 * v + 1];
                    if (!ratio) continue;
                    memcpy(c->verts_px + 2 * c->nvert, dst, 2 * sizeof *dst);
                    dst[0] /= (float)im->w; /* as DALI: coordinate / width in float */
                    dst[1] /= (float)im->h;
                }
            }
            if (a->rle >= 0) {
                sl__coco_rle r = g->rle[a->rle];
                memcpy(c->cnts + c->ncnt, g->cnt + r.first, (size_t)r.m * sizeof *c->cnts);
                r.first = c->ncnt;
                r.mask = (int32_t)j;
                c->ncnt += r.m;
                c->rles[c->nrle++] = r;
            }
        }
        im->pn = c->npoly - im->pfirst;
        im->vn = c->nvert - im->vfirst;
        im->rn = c->nrle - im->rfirst;
    }
    return SL_OK;
}

sl_status sl__coco_parse(const char *json, size_t n, const char *path, const sl__coco_opts *o,
                         sl__coco **out, sl_err *err) {
    *out = NULL;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(json, n, &end, 0);
    if (!root) {
        size_t off = end && end >= json && end <= json + n ? (size_t)(end - json) : n;
        int64_t line, col;
        line_col(json, off, &line, &col);
        return sl_err_set(err, SL_EFORMAT, "%s:%lld:%lld: not valid JSON%s", path, (long long)line,
                          (long long)col, off >= n ? " (the file ends too soon)" : "");
    }
    sl_status st = SL_OK;
    sl__coco *c = NULL;
    idpair *cats = NULL, *ids = NULL;
    ann *anns = NULL;
    int64_t ncat = 0, nann = 0, *order = NULL;
    segm g;
    memset(&g, 0, sizeof g);
    char where[96];
    const cJSON *images = NULL, *categories = NULL, *annotations = NULL, *x;
    if (!cJSON_IsObject(root)) {
        st = sl_err_set(err, SL_EFORMAT, "%s: the top level is not a JSON object", path);
        goto done;
    }
    if ((st = get_array(root, "images", true, &images, path, "the top-level object", err)) ||
        (st = get_array(root, "categories", false, &categories, path, "the top-level object",
                        err)) ||
        (st = get_array(root, "annotations", false, &annotations, path, "the top-level object",
                        err)))
        goto done;

    /* images, sorted by id (DALI's order) */
    c = sl__calloc(1, sizeof *c, err);
    int64_t nimg = cJSON_GetArraySize(images);
    if (!c || !(c->img = sl__calloc((size_t)(nimg > 0 ? nimg : 1), sizeof *c->img, err))) {
        st = SL_ENOMEM;
        goto done;
    }
    cJSON_ArrayForEach(x, images) {
        int64_t i = c->n;
        snprintf(where, sizeof where, "images[%lld]", (long long)i);
        if (!cJSON_IsObject(x)) {
            st = sl_err_set(err, SL_EFORMAT, "%s: %s is not an object", path, where);
            goto done;
        }
        image *im = &c->img[i];
        im->order = i;
        if ((st = get_int(x, "id", true, &im->id, path, where, err))) goto done;
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(x, "file_name");
        if (!cJSON_IsString(fn) || !fn->valuestring[0]) {
            st = sl_err_set(err, SL_EFORMAT, "%s: %s (id %d): \"file_name\" is %s", path, where,
                            im->id, fn ? "not a non-empty string" : "missing");
            goto done;
        }
        const char *dims[2] = {"width", "height"};
        for (int d = 0; d < 2; d++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(x, dims[d]);
            double *dst = d ? &im->h : &im->w;
            if (!v && !o->ratio && !o->rles) continue;
            if (!cJSON_IsNumber(v) || !(v->valuedouble > 0) || !isfinite(v->valuedouble) ||
                (o->rles && (v->valuedouble != floor(v->valuedouble) || v->valuedouble > 65535))) {
                st = sl_err_set(err, SL_EFORMAT, "%s: %s (id %d): \"%s\" is %s%s", path, where,
                                im->id, dims[d],
                                !v        ? "missing"
                                : o->rles ? "not a whole number of pixels within 1..65535"
                                          : "not a positive number",
                                o->rles    ? " (pixelwise_masks=True needs the image's size)"
                                : o->ratio ? " (ratio=True divides by it)"
                                           : "");
                goto done;
            }
            *dst = v->valuedouble;
        }
        im->file = strdup(fn->valuestring);
        if (!im->file) {
            st = sl_err_set(err, SL_ENOMEM, "out of memory");
            goto done;
        }
        c->n++;
    }
    qsort(c->img, (size_t)c->n, sizeof *c->img, cmp_image);
    ids = sl__calloc((size_t)(c->n > 0 ? c->n : 1), sizeof *ids, err);
    if (!ids) {
        st = SL_ENOMEM;
        goto done;
    }
    for (int64_t i = 0; i < c->n; i++) {
        if (i > 0 && c->img[i].id == c->img[i - 1].id) {
            st = sl_err_set(err, SL_EFORMAT, "%s: images[%lld] and images[%lld] share the id %d",
                            path, (long long)c->img[i - 1].order, (long long)c->img[i].order,
                            c->img[i].id);
            goto done;
        }
        ids[i].id = c->img[i].id;
        ids[i].val = (int32_t)i;
    }

    /* categories: id -> 1..K in the order listed */
    if (categories) {
        int64_t k = cJSON_GetArraySize(categories);
        cats = sl__calloc((size_t)(k > 0 ? k : 1), sizeof *cats, err);
        if (!cats) {
            st = SL_ENOMEM;
            goto done;
        }
        cJSON_ArrayForEach(x, categories) {
            snprintf(where, sizeof where, "categories[%lld]", (long long)ncat);
            if (!cJSON_IsObject(x)) {
                st = sl_err_set(err, SL_EFORMAT, "%s: %s is not an object", path, where);
                goto done;
            }
            if ((st = get_int(x, "id", true, &cats[ncat].id, path, where, err))) goto done;
            cats[ncat].val = (int32_t)(ncat + 1);
            ncat++;
        }
        qsort(cats, (size_t)ncat, sizeof *cats, cmp_pair);
        for (int64_t i = 1; i < ncat; i++)
            if (cats[i].id == cats[i - 1].id) {
                st = sl_err_set(err, SL_EFORMAT, "%s: two categories have the id %d", path,
                                cats[i].id);
                goto done;
            }
    }

    /* annotations, kept in the file's order */
    if (annotations) {
        int64_t k = cJSON_GetArraySize(annotations);
        anns = sl__calloc((size_t)(k > 0 ? k : 1), sizeof *anns, err);
        if (!anns) {
            st = SL_ENOMEM;
            goto done;
        }
        int64_t idx = -1;
        cJSON_ArrayForEach(x, annotations) {
            idx++;
            int32_t aid = 0, image_id = 0, cat = 0, crowd = 0;
            if (!cJSON_IsObject(x)) {
                st = sl_err_set(err, SL_EFORMAT, "%s: annotations[%lld] is not an object", path,
                                (long long)idx);
                goto done;
            }
            snprintf(where, sizeof where, "annotations[%lld]", (long long)idx);
            if ((st = get_int(x, "id", false, &aid, path, where, err))) goto done;
            if (cJSON_GetObjectItemCaseSensitive(x, "id"))
                snprintf(where, sizeof where, "annotations[%lld] (id %d)", (long long)idx, aid);
            if ((st = get_int(x, "image_id", true, &image_id, path, where, err)) ||
                (st = get_int(x, "category_id", true, &cat, path, where, err)) ||
                (st = get_int(x, "iscrowd", false, &crowd, path, where, err)))
                goto done;
            const idpair *im = find(ids, c->n, image_id);
            if (!im) {
                st = sl_err_set(err, SL_EFORMAT, "%s: %s: image_id %d is no image's id", path,
                                where, image_id);
                goto done;
            }
            const idpair *cp = categories ? find(cats, ncat, cat) : NULL;
            if (!cp && (categories || !o->keep_ids)) {
                st = sl_err_set(err, SL_EFORMAT, "%s: %s: category_id %d is no category's id", path,
                                where, cat);
                goto done;
            }
            const cJSON *bb = cJSON_GetObjectItemCaseSensitive(x, "bbox");
            if (!cJSON_IsArray(bb) || cJSON_GetArraySize(bb) != 4) {
                st = sl_err_set(err, SL_EFORMAT, "%s: %s: \"bbox\" is %s", path, where,
                                bb ? "not an array of 4 numbers" : "missing");
                goto done;
            }
            double b[4];
            int j = 0;
            const cJSON *v;
            cJSON_ArrayForEach(v, bb) {
                if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) ||
                    fabs(v->valuedouble) > 3.4e38) {
                    st = sl_err_set(err, SL_EFORMAT,
                                    "%s: %s: \"bbox\"[%d] is not a finite number within float",
                                    path, where, j);
                    goto done;
                }
                b[j++] = v->valuedouble;
            }
            if (b[2] < 0 || b[3] < 0) {
                st = sl_err_set(err, SL_EFORMAT, "%s: %s: \"bbox\" has a negative %s (%g)", path,
                                where, b[2] < 0 ? "width" : "height", b[2] < 0 ? b[2] : b[3]);
                goto done;
            }
            /* as DALI: single precision, the size test on [x, y, w, h], then ltrb, then ratio */
            float fb[4] = {(float)b[0], (float)b[1], (float)b[2], (float)b[3]};
            if (!(fb[2] >= (float)o->size_threshold && fb[3] >= (float)o->size_threshold)) continue;
            if (crowd != 0 && !o->include_iscrowd) continue;
            if (o->ltrb) {
                fb[2] += fb[0];
                fb[3] += fb[1];
            }
            ann *a = &anns[nann++];
            a->img = im->val;
            const image *img = &c->img[im->val];
            for (int q = 0; q < 4; q++)
                a->box[q] = o->ratio ? fb[q] / (float)(q % 2 ? img->h : img->w) : fb[q];
            a->label = o->keep_ids ? cat : cp->val;
            if (o->polygons && (st = parse_segm(x, img, o, &g, a, path, where, err))) goto done;
        }
    }

    /* group the boxes by image (stable: the file's order within an image) */
    for (int64_t i = 0; i < nann; i++) c->img[anns[i].img].n++;
    int64_t total = 0;
    for (int64_t i = 0; i < c->n; i++) {
        c->img[i].first = total;
        total += c->img[i].n;
    }
    c->boxes = sl__malloc((size_t)(total > 0 ? total : 1) * 4 * sizeof *c->boxes, err);
    c->labels = sl__malloc((size_t)(total > 0 ? total : 1) * sizeof *c->labels, err);
    if (!c->boxes || !c->labels) {
        st = SL_ENOMEM;
        goto done;
    }
    order = sl__malloc((size_t)(total > 0 ? total : 1) * sizeof *order, err);
    if (!order) {
        st = SL_ENOMEM;
        goto done;
    }
    c->nobj = total;
    for (int64_t i = 0; i < c->n; i++) c->img[i].n = 0;
    for (int64_t i = 0; i < nann; i++) {
        image *im = &c->img[anns[i].img];
        int64_t at = im->first + im->n++;
        memcpy(c->boxes + at * 4, anns[i].box, sizeof anns[i].box);
        c->labels[at] = anns[i].label;
        order[at] = i;
    }
    if (o->polygons && (st = group_segm(c, anns, order, &g, o->ratio, err))) goto done;
    if (o->skip_empty) { /* the images left keep their boxes' places */
        int64_t m = 0;
        for (int64_t i = 0; i < c->n; i++) {
            if (c->img[i].n == 0)
                free(c->img[i].file);
            else
                c->img[m++] = c->img[i];
        }
        c->n = m;
    }

done:
    cJSON_Delete(root);
    free(cats);
    free(ids);
    free(anns);
    free(order);
    segm_free(&g);
    if (st) {
        sl__coco_close(c);
        return st;
    }
    *out = c;
    return SL_OK;
}

#endif
