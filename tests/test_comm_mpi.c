/* SPDX-License-Identifier: Apache-2.0 */
/* sl_comm's MPI backend, and sl_trainer across processes. Run by ctest as one process, the test
 * starts itself again under `mpirun --oversubscribe --allow-run-as-root -np 3` and passes on its
 * exit status; each rank then checks all-reduce sum/average (exact values), bit-identical results
 * on every rank, broadcast, barrier, and that three processes of one replica each, training on
 * their shards of a global batch, end with the same parameters as one process with a local cpu:3
 * trainer (within 1e-6 relative) and bit-identical parameters on every rank. Builds without MPI
 * skip (exit 0). */
#include "check.h"
#include "sluice/comm.h"
#include "sluice/train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef SLUICE_HAVE_MPI
int main(void) {
    printf("comm_mpi: this build has no MPI; skipped\n");
    return 0;
}
#else
#include <mpi.h>

enum { NP = 3, B = 60, IN = 784, HID = 64, C = 10 };

static void make_batch(float *x, float *y, unsigned seed) {
    srand(seed);
    for (int i = 0; i < B * IN; i++) x[i] = (float)(rand() % 256) / 255.0f;
    memset(y, 0, sizeof(float) * B * C);
    for (int r = 0; r < B; r++) y[r * C + rand() % C] = 1.0f;
}

static void config(sl_trainer_config *cfg, int replicas) {
    sl_trainer_config_default(cfg);
    cfg->model.nsizes = 3;
    cfg->model.sizes[0] = IN;
    cfg->model.sizes[1] = HID;
    cfg->model.sizes[2] = C;
    cfg->optim.lr = 0.5f;
    cfg->replicas = replicas;
    for (int k = 0; k < replicas; k++) cfg->devices[k] = sl_cpu();
}

static int run_rank(void) {
    int provided = 0;
    MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided);
    sl_err err;
    sl_comm_config cc;
    memset(&cc, 0, sizeof cc);
    cc.kind = SL_COMM_MPI;
    sl_comm *c = NULL;
    int n = 0;
    CHECK_OK(sl_comm_create(&cc, &c, 1, &n, &err), &err);
    if (!c) {
        MPI_Finalize();
        return check_done();
    }
    CHECK_EQ_INT(n, 1);
    const int rank = sl_comm_rank(c), size = sl_comm_size(c);
    CHECK_EQ_INT(size, NP);

    /* sums of small integers are exact whatever the order */
    float f[1000];
    for (int i = 0; i < 1000; i++) f[i] = (float)(i + rank * 1000);
    CHECK_OK(sl_comm_allreduce(c, f, 1000, SL_DTYPE_F32, SL_REDUCE_SUM, NULL, &err), &err);
    for (int i = 0; i < 1000; i++) CHECK(f[i] == (float)(NP * i + 1000 * (NP * (NP - 1) / 2)));
    double d[7];
    for (int i = 0; i < 7; i++) d[i] = 2.0 * rank + i;
    CHECK_OK(sl_comm_allreduce(c, d, 7, SL_DTYPE_F64, SL_REDUCE_AVG, NULL, &err), &err);
    for (int i = 0; i < 7; i++) CHECK(d[i] == (double)(NP - 1) + i);
    int64_t l = rank + 1;
    CHECK_OK(sl_comm_allreduce(c, &l, 1, SL_DTYPE_I64, SL_REDUCE_SUM, NULL, &err), &err);
    CHECK_EQ_INT(l, NP * (NP + 1) / 2);
    /* inexact sums: the same bits everywhere (rank 0 broadcasts its result, the others compare) */
    float g[513], g0[513];
    for (int i = 0; i < 513; i++) g[i] = 1.0f / (float)(i + 3 + rank);
    CHECK_OK(sl_comm_allreduce(c, g, 513, SL_DTYPE_F32, SL_REDUCE_AVG, NULL, &err), &err);
    memcpy(g0, g, sizeof g);
    CHECK_OK(sl_comm_broadcast(c, g0, sizeof g0, 0, NULL, &err), &err);
    CHECK(memcmp(g0, g, sizeof g) == 0);
    CHECK_OK(sl_comm_barrier(c, &err), &err);

    /* three processes x one replica == one process x cpu:3 */
    float *x = malloc(sizeof(float) * B * IN), *y = malloc(sizeof(float) * B * C);
    sl_tensor tx, ty, xs, ys;
    int64_t sx[2] = {B, IN}, sy[2] = {B, C};
    sl_tensor_wrap(&tx, x, SL_DTYPE_F32, sl_cpu(), 2, sx, NULL);
    sl_tensor_wrap(&ty, y, SL_DTYPE_F32, sl_cpu(), 2, sy, NULL);
    sl_trainer_config cfg;
    config(&cfg, 1);
    cfg.comms = &c;
    sl_trainer *dist = NULL, *local = NULL;
    CHECK_OK(sl_trainer_create(&cfg, &dist, &err), &err);
    if (rank == 0) {
        config(&cfg, NP);
        CHECK_OK(sl_trainer_create(&cfg, &local, &err), &err);
    }
    for (int step = 0; step < 2 && dist; step++) {
        make_batch(x, y, 7 + step);
        sl_tensor_slice(&tx, 0, rank * (B / NP), (rank + 1) * (B / NP), &xs, NULL);
        sl_tensor_slice(&ty, 0, rank * (B / NP), (rank + 1) * (B / NP), &ys, NULL);
        float ld = 0, ll = 0;
        CHECK_OK(sl_trainer_step(dist, &xs, &ys, &ld, &err), &err);
        if (local) {
            CHECK_OK(sl_trainer_step_global(local, &tx, &ty, &ll, &err), &err);
            CHECK_NEAR(ld, ll, 1e-6 * ll);
        }
    }
    if (dist) {
        sl_mlp *m = sl_trainer_model(dist, 0);
        const int64_t P = sl_mlp_num_params(m);
        float *p = malloc(P * 4), *p0 = malloc(P * 4), *pl = malloc(P * 4);
        sl_mlp_get_params(m, p, P, NULL);
        memcpy(p0, p, P * 4);
        CHECK_OK(sl_comm_broadcast(c, p0, (size_t)P * 4, 0, NULL, &err), &err);
        CHECK_MSG(memcmp(p0, p, P * 4) == 0, "rank %d: params differ from rank 0's", rank);
        if (local) {
            sl_mlp_get_params(sl_trainer_model(local, 0), pl, P, NULL);
            double dmax = 0, smax = 0;
            for (int64_t i = 0; i < P; i++) {
                dmax = fmax(dmax, fabs((double)pl[i] - p[i]));
                smax = fmax(smax, fabs((double)pl[i]));
            }
            CHECK_MSG(dmax <= 1e-6 * smax, "mpi vs local cpu:3: %.3g relative", dmax / smax);
        }
        free(p);
        free(p0);
        free(pl);
    }
    sl_trainer_free(dist);
    sl_trainer_free(local);
    free(x);
    free(y);
    sl_comm_free(c);
    MPI_Finalize();
    return check_done();
}

int main(int argc, char **argv) {
    if (getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE")) return run_rank();
    /* not under mpirun: start NP copies of this program */
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 "
             "timeout 300 mpirun --oversubscribe --allow-run-as-root -np %d '%s'",
             NP, argv[0]);
    int rc = system(cmd);
    CHECK_MSG(rc == 0, "%s exited with status %d", cmd, rc);
    return check_done();
}
#endif
