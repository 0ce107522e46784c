// SPDX-License-Identifier: GPL-2.0
/*
 * rxe_sr: calls Rust cannot make directly into include/linux/netdevice.h: static inlines and
 * macros, one exported function each. No logic of the driver's.
 */
#include <linux/netdevice.h>
#include <linux/if_arp.h>

#include "rxe_sr_glue.h"

bool rxe_sr_glue_netif_running(const struct net_device *ndev)
{
	return netif_running(ndev);
}

bool rxe_sr_glue_netif_carrier_ok(const struct net_device *ndev)
{
	return netif_carrier_ok(ndev);
}

void rxe_sr_glue_dev_put(struct net_device *ndev)
{
	dev_put(ndev);
}
