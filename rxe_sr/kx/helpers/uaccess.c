// SPDX-License-Identifier: GPL-2.0
/*
 * rxe_sr: calls Rust cannot make directly into include/linux/uaccess.h: static inlines and
 * macros, one exported function each. No logic of the driver's.
 */
#include <linux/uaccess.h>
#include <linux/kernel.h>

#include "rxe_sr_glue.h"

int rxe_sr_glue_copy_to_user(u64 uaddr, const void *src, size_t len)
{
	return copy_to_user(u64_to_user_ptr(uaddr), src, len) ? -EFAULT : 0;
}
