// SPDX-License-Identifier: GPL-2.0
/*
 * rxe_sr: calls Rust cannot make directly into include/linux/spinlock.h: static inlines and
 * macros, one exported function each. No logic of the driver's.
 */
#include <linux/spinlock.h>

#include "rxe_sr_glue.h"

unsigned long rxe_sr_glue_spin_lock_irqsave(spinlock_t *lock)
{
	unsigned long flags;

	spin_lock_irqsave(lock, flags);
	return flags;
}

void rxe_sr_glue_spin_unlock_irqrestore(spinlock_t *lock, unsigned long flags)
{
	spin_unlock_irqrestore(lock, flags);
}
