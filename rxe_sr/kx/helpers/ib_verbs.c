// SPDX-License-Identifier: GPL-2.0
/*
 * rxe_sr: calls Rust cannot make directly into include/rdma/ib_verbs.h: static inlines and
 * macros, one exported function each. No logic of the driver's.
 */
#include <rdma/ib_verbs.h>
#include <rdma/ib_mad.h>

#include "rxe_sr_glue.h"

static_assert((int)RXE_SR_MAD_RESULT_SUCCESS == (int)IB_MAD_RESULT_SUCCESS);
static_assert((int)RXE_SR_MAD_RESULT_REPLY == (int)IB_MAD_RESULT_REPLY);

bool rxe_sr_glue_ib_device_try_get(struct ib_device *dev)
{
	return ib_device_try_get(dev);
}

