// SPDX-License-Identifier: GPL-2.0
/*
 * rxe_sr: calls Rust cannot make directly into include/linux/xarray.h: static inlines and
 * macros, one exported function each. No logic of the driver's.
 */
#include <linux/xarray.h>

#include "rxe_sr_glue.h"

void rxe_sr_glue_xa_init_alloc1(struct xarray *xa)
{
	xa_init_flags(xa, XA_FLAGS_ALLOC1);
}

int rxe_sr_glue_xa_alloc_cyclic(struct xarray *xa, u32 *id, void *entry, u32 min, u32 max,
				u32 *next)
{
	int ret = xa_alloc_cyclic(xa, id, entry, XA_LIMIT(min, max), next, GFP_KERNEL);

	return ret < 0 ? ret : 0; /* 1 only says the indices wrapped */
}

/* The first entry at or above *index (reserved slots skipped), its index in *index. */
void *rxe_sr_glue_xa_first(struct xarray *xa, unsigned long *index)
{
	return xa_find(xa, index, ULONG_MAX, XA_PRESENT);
}

void rxe_sr_glue_xa_lock(struct xarray *xa)
{
	xa_lock(xa);
}

void rxe_sr_glue_xa_unlock(struct xarray *xa)
{
	xa_unlock(xa);
}

int rxe_sr_glue_xa_store(struct xarray *xa, unsigned long index, void *entry)
{
	return xa_err(xa_store(xa, index, entry, GFP_KERNEL));
}
