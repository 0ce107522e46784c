// SPDX-License-Identifier: GPL-2.0
/*
 * rxe_sr: calls Rust cannot make directly into include/linux/ratelimit.h (the module's one
 * state for warnings caused by remote input): static inlines and macros, one exported function
 * each. No logic of the driver's.
 */
#include <linux/ratelimit.h>

#include "rxe_sr_glue.h"

static DEFINE_RATELIMIT_STATE(rxe_sr_remote_warnings, DEFAULT_RATELIMIT_INTERVAL,
			      DEFAULT_RATELIMIT_BURST);

bool rxe_sr_glue_remote_warning_ratelimit(void)
{
	return __ratelimit(&rxe_sr_remote_warnings);
}
