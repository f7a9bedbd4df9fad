/* SPDX-License-Identifier: Apache-2.0 */
/* The pipeline text parser's names and functions: the scopes of the module's names and of each
 * helper call's (hash-indexed), the bound names (--arg), the functions the text defines, indexed
 * by name, and the closest name for "did you mean"; a helper function's call, its arguments
 * bound to its parameters, defaults evaluated as constants, recursion refused and the depth of
 * calls bounded; and which function is the pipeline: the one asked for, else the decorated one,
 * else the only one no other function calls. */
#include "text/parse_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- names ----------------------------------------------------------------------------------- */

static uint32_t name_hash(const char *s) {
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static env_entry *scope_find(scope *sc, const char *name) {
    if (!sc->hcap) return NULL;
    uint32_t mask = (uint32_t)sc->hcap - 1;
    for (uint32_t h = name_hash(name) & mask;; h = (h + 1) & mask) {
        int slot = sc->hash[h];
        if (!slot) return NULL;
        if (!strcmp(sc->env[slot - 1].name, name)) return &sc->env[slot - 1];
    }
}

/* Indexes env[i]; the table is kept at most half full. */
static bool scope_index(scope *sc, int i) {
    if (2 * (sc->nenv + 1) > sc->hcap) {
        int cap = sc->hcap ? 2 * sc->hcap : 64;
        int *h = calloc((size_t)cap, sizeof *h);
        if (!h) return false;
        free(sc->hash);
        sc->hash = h;
        sc->hcap = cap;
        for (int k = 0; k < sc->nenv; k++)
            if (k != i && !scope_index(sc, k)) return false;
    }
    uint32_t mask = (uint32_t)sc->hcap - 1, h = name_hash(sc->env[i].name) & mask;
    while (sc->hash[h]) h = (h + 1) & mask;
    sc->hash[h] = i + 1;
    return true;
}

void sl__parse_scope_free(scope *sc) {
    for (int i = 0; i < sc->nenv; i++) sl__val_free(&sc->env[i].v.val);
    free(sc->env);
    free(sc->hash);
    memset(sc, 0, sizeof *sc);
}

/* The running function's names, else the module's. */
env_entry *sl__parse_env_find(parser *ps, const char *name) {
    env_entry *e = ps->local ? scope_find(ps->local, name) : NULL;
    return e ? e : scope_find(&ps->globals, name);
}

const sl_pipeline_bind *sl__parse_bind_find(parser *ps, const char *name) {
    const sl_pipeline_bind *found = NULL;
    for (int i = 0; i < ps->nbind; i++)
        if (ps->binds[i].name && !strcmp(ps->binds[i].name, name)) found = &ps->binds[i];
    return found; /* the last one wins */
}

/* The entry for name in the running scope, its old value freed. */
env_entry *sl__parse_env_set(parser *ps, const char *name) {
    scope *sc = ps->local ? ps->local : &ps->globals;
    env_entry *e = scope_find(sc, name);
    if (e) {
        sl__val_free(&e->v.val);
        memset(&e->v, 0, sizeof e->v);
        e->unbound = false;
        e->one_sided = 0;
        return e;
    }
    if (sc->nenv == sc->capenv) {
        int cap = sc->capenv ? 2 * sc->capenv : 16;
        env_entry *n = realloc(sc->env, (size_t)cap * sizeof *n);
        if (!n) {
            sl_err_set(ps->err, SL_ENOMEM, "out of memory");
            return NULL;
        }
        sc->env = n;
        sc->capenv = cap;
    }
    e = &sc->env[sc->nenv];
    memset(e, 0, sizeof *e);
    snprintf(e->name, sizeof e->name, "%s", name);
    if (!scope_index(sc, sc->nenv)) {
        sl_err_set(ps->err, SL_ENOMEM, "out of memory");
        return NULL;
    }
    sc->nenv++;
    return e;
}

func *sl__parse_func_find(parser *ps, const char *name) {
    if (!ps->fhcap) return NULL;
    uint32_t mask = (uint32_t)ps->fhcap - 1;
    for (uint32_t h = name_hash(name) & mask;; h = (h + 1) & mask) {
        int slot = ps->fhash[h];
        if (!slot) return NULL;
        if (!strcmp(ps->funcs[slot - 1]->name, name)) return ps->funcs[slot - 1];
    }
}

/* Indexes the functions once they are all parsed; a name defined twice is an error. */
sl_status sl__parse_func_index(parser *ps) {
    int cap = 64;
    while (cap < 2 * ps->nfuncs) cap *= 2;
    if (!(ps->fhash = calloc((size_t)cap, sizeof *ps->fhash)))
        return sl_err_set(ps->err, SL_ENOMEM, "out of memory");
    ps->fhcap = cap;
    for (int i = 0; i < ps->nfuncs; i++) {
        func *f = ps->funcs[i], *twice = sl__parse_func_find(ps, f->name);
        if (twice)
            return sl__parse_perr(ps, SL_EINVAL, f->pos,
                                  "function '%s' is defined twice (first on line %d)", f->name,
                                  twice->pos.line);
        uint32_t mask = (uint32_t)cap - 1, h = name_hash(f->name) & mask;
        while (ps->fhash[h]) h = (h + 1) & mask;
        ps->fhash[h] = i + 1;
    }
    return SL_OK;
}

static void suggest_in(const char *name, const char *cand, int *bd, const char **best) {
    int d = sl__op_distance(name, cand);
    if (d < *bd) *bd = d, *best = cand;
}

const char *sl__parse_suggest_name(parser *ps, const char *name) {
    const char *best = NULL;
    int bd = 99;
    for (int i = 0; ps->local && i < ps->local->nenv; i++)
        suggest_in(name, ps->local->env[i].name, &bd, &best);
    for (int i = 0; i < ps->globals.nenv; i++)
        suggest_in(name, ps->globals.env[i].name, &bd, &best);
    for (int i = 0; i < ps->nbind; i++)
        if (ps->binds[i].name) suggest_in(name, ps->binds[i].name, &bd, &best);
    for (int i = 0; i < ps->nfuncs; i++) suggest_in(name, ps->funcs[i]->name, &bd, &best);
    size_t len = strlen(name);
    return best && bd <= (len < 4 ? 1 : len < 8 ? 2 : 3) ? best : NULL;
}

/* ---- helper calls ---------------------------------------------------------------------------- */

/* Runs f's body for a call (e), with a scope of its own; r: its return value (None without). */
sl_status sl__parse_call_func(parser *ps, func *f, const expr *e, int want, result *r) {
    if (f->active)
        return sl__parse_perr(
            ps, SL_EINVAL, e->pos,
            "recursion is not supported in a pipeline: '%s' is called while it runs (line "
            "%d); the pipeline is unrolled when it is built",
            f->name, f->pos.line);
    if (ps->calls >= SL__PARSE_CALLS_MAX)
        return sl__parse_perr(ps, SL_EINVAL, e->pos, "helper calls nested too deeply (over %d)",
                              SL__PARSE_CALLS_MAX);
    if (e->n > f->nparams)
        return sl__parse_perr(ps, SL_EINVAL, e->items[f->nparams]->pos,
                              "%s() takes %d positional argument%s but %d were given", f->name,
                              f->nparams, f->nparams == 1 ? "" : "s", e->n);
    result args[SL__PARSE_PARAMS_MAX];
    bool given[SL__PARSE_PARAMS_MAX] = {false};
    memset(args, 0, sizeof args);
    sl_status st = SL_OK;
    for (int k = 0; k < e->n && st == SL_OK; k++) {
        st = sl__parse_eval(ps, e->items[k], 1, &args[k]);
        given[k] = st == SL_OK;
    }
    kwargs kw;
    memset(&kw, 0, sizeof kw);
    if (st == SL_OK) st = sl__parse_eval_kwargs(ps, e, &kw);
    for (int k = 0; k < kw.n && st == SL_OK; k++) {
        int p = 0;
        while (p < f->nparams && strcmp(f->params[p], kw.names[k])) p++;
        if (p == f->nparams) {
            st = sl__parse_perr(ps, SL_EINVAL, kw.pos[k],
                                "%s() got an unexpected keyword argument '%s'", f->name,
                                kw.names[k]);
        } else if (given[p]) {
            st = sl__parse_perr(ps, SL_EINVAL, kw.pos[k],
                                "%s() got multiple values for argument '%s'", f->name, kw.names[k]);
        } else {
            args[p] = kw.vals[k];
            memset(&kw.vals[k], 0, sizeof kw.vals[k]);
            given[p] = true;
        }
    }
    sl__parse_kwargs_free(&kw);
    /* defaults: constants, evaluated in the module's scope when the call needs them */
    for (int p = 0; p < f->nparams && st == SL_OK; p++) {
        if (given[p]) continue;
        if (!f->defaults[p]) {
            st = sl__parse_perr(ps, SL_EINVAL, e->pos, "%s() missing argument '%s'", f->name,
                                f->params[p]);
            break;
        }
        scope *saved = ps->local;
        bool no_ops = ps->no_ops;
        ps->local = NULL;
        ps->no_ops = true;
        st = sl__parse_eval_const(ps, f->defaults[p], &args[p].val, "a default");
        ps->local = saved;
        ps->no_ops = no_ops;
        given[p] = st == SL_OK;
    }
    scope sc;
    memset(&sc, 0, sizeof sc);
    scope *saved = ps->local;
    ps->local = &sc;
    for (int p = 0; p < f->nparams && st == SL_OK; p++) {
        env_entry *v = sl__parse_env_set(ps, f->params[p]);
        if (!v) {
            st = SL_ENOMEM;
            break;
        }
        v->v = args[p];
        memset(&args[p], 0, sizeof args[p]);
    }
    for (int p = 0; p < SL__PARSE_PARAMS_MAX; p++) sl__parse_result_free(&args[p]);
    frame fr, *saved_fr = ps->fr;
    memset(&fr, 0, sizeof fr);
    fr.fn = f;
    fr.want = want;
    const stmt *saved_loop = ps->loop;
    if (st == SL_OK) {
        ps->fr = &fr;
        ps->loop = NULL;
        f->active = true;
        ps->calls++;
        st = sl__parse_exec_block(ps, &f->body);
        ps->calls--;
        f->active = false;
        ps->flow = FLOW_NEXT;
    }
    ps->fr = saved_fr;
    ps->loop = saved_loop;
    ps->local = saved;
    sl__parse_scope_free(&sc);
    if (st != SL_OK) {
        sl__parse_result_free(&fr.ret);
        return st;
    }
    *r = fr.ret; /* None when it did not return */
    return SL_OK;
}

/* ---- which function is the pipeline ---------------------------------------------------------- */

static void mark_calls_block(parser *ps, const block *b, const func *in);

static void mark_calls(parser *ps, const expr *e, const func *in) {
    if (!e) return;
    if (e->kind == E_CALL && e->a->kind == E_NAME) {
        func *f = sl__parse_func_find(ps, e->a->s);
        if (f && f != in) f->called = true;
    }
    mark_calls(ps, e->a, in);
    mark_calls(ps, e->b, in);
    mark_calls(ps, e->c, in);
    for (int k = 0; k < e->n; k++) mark_calls(ps, e->items[k], in);
    for (int k = 0; k < e->nkw; k++) mark_calls(ps, e->kwvals[k], in);
}

static void mark_calls_block(parser *ps, const block *b, const func *in) {
    for (int k = 0; k < b->n; k++) {
        const stmt *s = b->items[k];
        mark_calls(ps, s->lhs, in);
        mark_calls(ps, s->rhs, in);
        for (int c = 0; c < s->ncond; c++) mark_calls(ps, s->conds[c], in);
        for (int c = 0; s->kind == S_IF && c <= s->ncond; c++)
            mark_calls_block(ps, &s->bodies[c], in);
        mark_calls_block(ps, &s->body, in);
        if (s->fn) {
            mark_calls_block(ps, &s->fn->body, s->fn);
            for (int p = 0; p < s->fn->nparams; p++) mark_calls(ps, s->fn->defaults[p], in);
        }
    }
}

/* "'a' (line 3), 'b' (line 9)" for the functions with pick(f) */
static void list_funcs(parser *ps, bool (*pick)(const func *), char *buf, size_t size) {
    size_t n = 0;
    int shown = 0;
    buf[0] = '\0';
    for (int i = 0; i < ps->nfuncs && n < size; i++) {
        const func *f = ps->funcs[i];
        if (pick && !pick(f)) continue;
        if (shown == 8) {
            snprintf(buf + n, size - n, ", ...");
            break;
        }
        n += (size_t)snprintf(buf + n, size - n, "%s'%s' (line %d)", shown ? ", " : "", f->name,
                              f->pos.line);
        shown++;
    }
}

static bool decorated(const func *f) {
    return f->deco != NULL;
}
static bool uncalled(const func *f) {
    return !f->called;
}

/* Sets ps->pipe: the function asked for; else the decorated one; else the only one nobody calls.
 * NULL: the module's code is the pipeline (it returns, or there is no function). */
sl_status sl__parse_choose_pipeline(parser *ps) {
    char names[320];
    ps->pipe = NULL;
    if (ps->function) {
        ps->pipe = sl__parse_func_find(ps, ps->function);
        if (ps->pipe) return SL_OK;
        list_funcs(ps, NULL, names, sizeof names);
        return sl_err_set(ps->err, SL_EINVAL,
                          "%s: error: no function '%s' in the pipeline text (%s%s)", ps->filename,
                          ps->function, ps->nfuncs ? "it defines " : "it defines no function",
                          names);
    }
    if (ps->module_returns || !ps->nfuncs) return SL_OK;
    const func *first = NULL;
    int n = 0;
    for (int i = 0; i < ps->nfuncs; i++)
        if (ps->funcs[i]->deco) {
            if (!n++) first = ps->funcs[i];
            ps->pipe = ps->funcs[i];
        }
    if (n == 1) return SL_OK;
    if (n > 1) {
        list_funcs(ps, decorated, names, sizeof names);
        return sl__parse_perr(
            ps, SL_EINVAL, first->pos,
            "several functions have a pipeline decorator: %s; pick one with --pipeline "
            "NAME",
            names);
    }
    mark_calls_block(ps, &ps->module, NULL);
    ps->pipe = NULL;
    for (int i = 0; i < ps->nfuncs; i++)
        if (!ps->funcs[i]->called) {
            if (!n++) first = ps->funcs[i];
            ps->pipe = ps->funcs[i];
        }
    if (n == 1) return SL_OK;
    if (n == 0)
        return sl__parse_perr(ps, SL_EINVAL, ps->funcs[0]->pos,
                              "no pipeline function: every function here is called by another; add "
                              "@pipeline_def to the pipeline, or pick it with --pipeline NAME");
    list_funcs(ps, uncalled, names, sizeof names);
    ps->pipe = NULL;
    return sl__parse_perr(ps, SL_EINVAL, first->pos,
                          "which function is the pipeline? %s are called by no other function; add "
                          "@pipeline_def to it, or pick one with --pipeline NAME",
                          names);
}
