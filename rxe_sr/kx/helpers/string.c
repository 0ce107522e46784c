// SPDX-License-Identifier: GPL-2.0
/*
 * rxe_sr: calls Rust cannot make directly into include/linux/string.h: static inlines and
 * macros, one exported function each. No logic of the driver's.
 */
#include <linux/string.h>

#include "rxe_sr_glue.h"

void rxe_sr_glue_copy_shared(void *dst, const void *src, size_t n)
{
	memcpy(dst, src, n);
}
