// SPDX-License-Identifier: GPL-2.0
/*
 * rxe_sr: calls Rust cannot make directly into include/linux/wait_bit.h: static inlines and
 * macros, one exported function each. No logic of the driver's.
 */
#include <linux/wait_bit.h>

#include "rxe_sr_glue.h"

/* Sleeps until *@v is zero (a teardown waiting for its users to drain). */
void rxe_sr_glue_wait_var_zero(u32 *v)
{
	wait_var_event(v, READ_ONCE(*v) == 0);
}

/* Wakes whoever waits on @v; uses the address as a key only (never reads *@v). */
void rxe_sr_glue_wake_up_var(u32 *v)
{
	/* Orders the caller's atomic update before the waiter's condition check. */
	smp_mb();
	wake_up_var(v);
}
