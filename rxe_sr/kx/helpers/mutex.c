// SPDX-License-Identifier: GPL-2.0
/*
 * rxe_sr: calls Rust cannot make directly into include/linux/mutex.h (the module's one global
 * mutex): static inlines and macros, one exported function each. No logic of the driver's.
 */
#include <linux/mutex.h>

#include "rxe_sr_glue.h"

static DEFINE_MUTEX(rxe_sr_global_mutex);

void rxe_sr_glue_global_lock(void)
{
	mutex_lock(&rxe_sr_global_mutex);
}

void rxe_sr_glue_global_unlock(void)
{
	mutex_unlock(&rxe_sr_global_mutex);
}
