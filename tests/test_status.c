/* SPDX-License-Identifier: Apache-2.0 */
/* Status table: names, messages, error records. */
#include "check.h"

#include <string.h>

int main(void) {
    CHECK_STR(sl_status_name(SL_OK), "SL_OK");
    CHECK_STR(sl_status_name(SL_ENOMEM), "SL_ENOMEM");
    CHECK_STR(sl_status_str(SL_EOF), "end of data");
    CHECK_STR(sl_status_str((sl_status)-999), "unknown status");
    CHECK(SL_EOF > 0); /* a normal outcome, not an error */
    CHECK(SL_EFORMAT < 0 && SL_ECUDA < 0 && SL_ENCCL < 0 && SL_EMPI < 0);

    sl_err e;
    sl_err_clear(&e);
    CHECK_EQ_INT(sl_err_set(&e, SL_EIO, "%s: cannot open", "data.mdb"), SL_EIO);
    CHECK_STR(e.msg, "data.mdb: cannot open");
    sl_err_prefix(&e, "shard %d: ", 2);
    CHECK_STR(e.msg, "shard 2: data.mdb: cannot open");
    CHECK_EQ_INT(e.status, SL_EIO);
    CHECK_EQ_INT(sl_err_set(NULL, SL_EINVAL, "ignored"), SL_EINVAL); /* NULL err is allowed */

    char big[2 * SL_ERRMSG_MAX];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    sl_err_set(&e, SL_EINVAL, "%s", big); /* truncated, still terminated */
    CHECK_EQ_INT(strlen(e.msg), SL_ERRMSG_MAX - 1);
    return check_done();
}
