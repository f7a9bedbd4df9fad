/* SPDX-License-Identifier: Apache-2.0 */
// The CUDA MLP's graph cache: a step (mlp_pass.cu's sl__mlp_pass_step) for one (inputs, batch,
// pitches, optimiser) key is captured once as a CUDA graph and replayed; NGRAPHS keys are cached,
// the least recently used replaced, and a failed capture turns graphs off for the model. mlp.cu
// decides which inputs a graph reads (in place, or the staged copies).
#include "train/mlp_cuda.h"

#include <string.h>

void sl__mlp_graph_drop(cuda_impl *c) {
    for (int i = 0; i < NGRAPHS; i++) {
        if (c->graphs[i].exec) cudaGraphExecDestroy(c->graphs[i].exec);
        memset(&c->graphs[i], 0, sizeof c->graphs[i]);
    }
}

// The cached graph for (x, y, B, pitches, o), or NULL; *victim (may be NULL) gets the entry a new
// graph would replace (a free one, else the least recently used).
graph_entry *sl__mlp_graph_find(cuda_impl *c, const sl_tensor *x, const sl_tensor *y,
                                const sl_optim *o, graph_entry **victim) {
    const int64_t B = x->shape[0], ldx = x->strides[0], ldy = y->strides[0];
    graph_entry *v = &c->graphs[0];
    for (int i = 0; i < NGRAPHS; i++) {
        graph_entry *g = &c->graphs[i];
        if (g->exec && g->x == x->data && g->y == y->data && g->o == o && g->rows == B &&
            g->ldx == ldx && g->ldy == ldy)
            return g;
        if (!g->exec || (v->exec && g->used < v->used)) v = g;
    }
    if (victim) *victim = v;
    return NULL;
}

// The graph for (x, y, B, pitches, o), captured on first use; NULL when capturing is not possible.
sl_status sl__mlp_graph_get(sl_mlp *m, const sl_tensor *x, const sl_tensor *y, sl_optim *o,
                            cudaGraphExec_t *out, sl_err *err) {
    cuda_impl *c = impl_of(m);
    const int64_t B = x->shape[0], ldx = x->strides[0], ldy = y->strides[0];
    *out = NULL;
    graph_entry *victim = NULL, *hit = sl__mlp_graph_find(c, x, y, o, &victim);
    if (hit) {
        hit->used = ++c->tick;
        *out = hit->exec;
        return SL_OK;
    }
    cudaGraph_t graph = NULL;
    SL_CUDA_TRY(err, cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeThreadLocal));
    sl_err cap_err;
    memset(&cap_err, 0, sizeof cap_err);
    sl_status st = sl__mlp_pass_step(m, x, y, o, &cap_err);
    cudaError_t e = cudaStreamEndCapture(c->stream, &graph);
    cudaGraphExec_t exec = NULL;
    if (st == SL_OK && e == cudaSuccess && graph) e = cudaGraphInstantiate(&exec, graph, 0);
    if (graph) cudaGraphDestroy(graph);
    if (st != SL_OK || e != cudaSuccess || !exec) {
        // not capturable here (or a launch error that plain launches will report): stop trying
        (void)cudaGetLastError();
        if (exec) cudaGraphExecDestroy(exec);
        c->graphs_off = 1;
        return SL_OK;
    }
    if (victim->exec) cudaGraphExecDestroy(victim->exec);
    victim->exec = exec;
    victim->x = x->data;
    victim->y = y->data;
    victim->o = o;
    victim->rows = B;
    victim->ldx = ldx;
    victim->ldy = ldy;
    victim->used = ++c->tick;
    *out = exec;
    return SL_OK;
}
