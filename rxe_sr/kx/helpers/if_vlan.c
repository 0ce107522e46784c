// SPDX-License-Identifier: GPL-2.0
/*
 * rxe_sr: calls Rust cannot make directly into include/linux/if_vlan.h: static inlines and
 * macros, one exported function each. No logic of the driver's.
 */
#include <linux/if_vlan.h>

#include "rxe_sr_glue.h"

bool rxe_sr_glue_is_vlan_dev(const struct net_device *ndev)
{
	return is_vlan_dev(ndev);
}
