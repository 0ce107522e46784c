// SPDX-License-Identifier: GPL-2.0
/*
 * rxe_sr: the module's registrations with other subsystems, each one static C table the core
 * links into its list and that calls the Rust handler kx/ gave when registering: the IPv4
 * and IPv6 address notifiers. They can become Rust `Registration` objects owning their
 * tables, as the link type's (kx/rdma_netlink.rs), the pernet subsystem's
 * (kx/net_namespace.rs) and the netdev notifier's (kx/netdevice.rs) are; until then the two
 * tables are here, registered once.
 */
#include <linux/netdevice.h>
#include <linux/inetdevice.h>
#include <net/addrconf.h>
#include <net/net_namespace.h>

#include "rxe_sr_glue.h"

/*
 * ---- address events: IPv4 and IPv6 addresses added to or removed from a netdev ----
 *
 * The core's roce_gid_mgmt.c follows the addresses of Ethernet netdevs only; these two
 * notifiers let rxe_sr follow the others (tun and other layer-3 devices). The IPv6 chain
 * is atomic: the handler must not sleep.
 */
static void (*rxe_sr_addr_event_fn)(unsigned long event, struct net_device *ndev);

static int rxe_sr_inetaddr_notify(struct notifier_block *nb, unsigned long event, void *arg)
{
	struct in_ifaddr *ifa = arg;

	rxe_sr_addr_event_fn(event, ifa->ifa_dev->dev);
	return NOTIFY_DONE;
}

static int rxe_sr_inet6addr_notify(struct notifier_block *nb, unsigned long event, void *arg)
{
	struct inet6_ifaddr *ifa = arg;

	rxe_sr_addr_event_fn(event, ifa->idev->dev);
	return NOTIFY_DONE;
}

static struct notifier_block rxe_sr_inetaddr_notifier = {
	.notifier_call = rxe_sr_inetaddr_notify,
};

static struct notifier_block rxe_sr_inet6addr_notifier = {
	.notifier_call = rxe_sr_inet6addr_notify,
};

int rxe_sr_glue_addr_notifiers_register(void (*fn)(unsigned long event, struct net_device *ndev))
{
	int err;

	rxe_sr_addr_event_fn = fn;
	err = register_inetaddr_notifier(&rxe_sr_inetaddr_notifier);
	if (err)
		return err;
	err = register_inet6addr_notifier(&rxe_sr_inet6addr_notifier);
	if (err)
		unregister_inetaddr_notifier(&rxe_sr_inetaddr_notifier);
	return err;
}

void rxe_sr_glue_addr_notifiers_unregister(void)
{
	unregister_inet6addr_notifier(&rxe_sr_inet6addr_notifier);
	unregister_inetaddr_notifier(&rxe_sr_inetaddr_notifier);
}
