// SPDX-License-Identifier: GPL-2.0
/*
 * rxe_sr: calls Rust cannot make directly into include/linux/delay.h: static inlines and
 * macros, one exported function each. No logic of the driver's.
 */
#include <linux/delay.h>

#include "rxe_sr_glue.h"

void rxe_sr_glue_msleep(unsigned int ms)
{
	msleep(ms);
}
