// SPDX-License-Identifier: GPL-2.0
/*
 * rxe_sr: calls Rust cannot make directly into include/linux/netdevice.h: static inlines and
 * macros, one exported function each. No logic of the driver's.
 */
#include <linux/netdevice.h>
#include <linux/if_arp.h>

#include "rxe_sr_glue.h"

void rxe_sr_glue_dev_hold(struct net_device *ndev)
{
	dev_hold(ndev);
}

void rxe_sr_glue_dev_put(struct net_device *ndev)
{
	dev_put(ndev);
}
