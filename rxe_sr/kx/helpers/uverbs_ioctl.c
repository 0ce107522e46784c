// SPDX-License-Identifier: GPL-2.0
/*
 * rxe_sr: calls Rust cannot make directly into include/rdma/uverbs_ioctl.h: static inlines and
 * macros, one exported function each. No logic of the driver's.
 */
#include <rdma/uverbs_ioctl.h>

#include "rxe_sr_glue.h"

struct ib_udata *rxe_sr_glue_attrs_udata(struct uverbs_attr_bundle *attrs)
{
	return attrs ? &attrs->driver_udata : NULL;
}

struct ib_ucontext *rxe_sr_glue_udata_ucontext(struct ib_udata *udata)
{
	struct uverbs_attr_bundle *attrs;

	if (!udata)
		return NULL;
	attrs = container_of(udata, struct uverbs_attr_bundle, driver_udata);
	return attrs->context;
}
