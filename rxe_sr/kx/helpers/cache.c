// SPDX-License-Identifier: GPL-2.0
/*
 * rxe_sr: calls Rust cannot make directly into include/linux/cache.h: static inlines and
 * macros, one exported function each. No logic of the driver's.
 */
#include <linux/cache.h>

#include "rxe_sr_glue.h"

u32 rxe_sr_glue_cache_line_size(void)
{
	return cache_line_size();
}
