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

int rxe_sr_glue_copy_to_udata(struct ib_udata *udata, const void *src, size_t len)
{
	if (!udata || udata->outlen < len)
		return -EINVAL;
	return ib_copy_to_udata(udata, (void *)src, len);
}

int rxe_sr_glue_copy_from_udata(struct ib_udata *udata, void *dst, size_t len)
{
	if (!udata || udata->inlen < len)
		return -EINVAL;
	return ib_copy_from_udata(dst, udata, len);
}

u64 rxe_sr_glue_mmap_offset(const struct rdma_user_mmap_entry *entry)
{
	return rdma_user_mmap_get_offset(entry);
}

void rxe_sr_glue_cq_event(struct ib_cq *cq, unsigned int type)
{
	struct ib_event ev = {
		.device = cq->device,
		.element.cq = cq,
		.event = type,
	};

	if (cq->event_handler)
		cq->event_handler(&ev, cq->cq_context);
}

void rxe_sr_glue_srq_event(struct ib_srq *srq, unsigned int type)
{
	struct ib_event ev = {
		.device = srq->device,
		.element.srq = srq,
		.event = type,
	};

	if (srq->event_handler)
		srq->event_handler(&ev, srq->srq_context);
}

void rxe_sr_glue_cq_comp(struct ib_cq *cq)
{
	if (cq->comp_handler)
		cq->comp_handler(cq, cq->cq_context);
}
