// SPDX-License-Identifier: GPL-2.0
/*
 * rxe_sr: network namespaces: a netdev's namespace, a namespace's identity, and the one place
 * the module writes a core field (a device's home namespace, see below). C because bindgen
 * keeps struct net opaque (it is large and configuration-dependent).
 */
#include <linux/netdevice.h>
#include <net/net_namespace.h>
#include <rdma/ib_verbs.h>

#include "rxe_sr_glue.h"

struct net *rxe_sr_glue_dev_net(const struct net_device *ndev)
{
	return dev_net(ndev);
}

/*
 * In the RDMA subsystem's exclusive netns mode (rdma system set netns exclusive) each
 * device belongs to one namespace. A link's device is placed in its netdev's namespace
 * before it is registered, so that the namespace which made the link (a container) sees
 * it, as it would see a physical device moved there; the same as the core's later
 * ib_alloc_device_with_net(). That namespace is the link command's own (the netdev was
 * looked up in the requesting socket's), so it is live until the registration is done;
 * from then on the core moves the device back to the initial namespace if that namespace
 * is dismantled first (rdma_dev_exit_net). An unregistered device is in the initial
 * namespace, which another namespace may access only in shared mode: then nothing is to
 * be done. The mode cannot change meanwhile: the core refuses to change it while a
 * namespace other than the initial one exists.
 */
void rxe_sr_glue_ib_device_home_net(struct ib_device *ibdev, struct net_device *ndev)
{
	struct net *net = dev_net(ndev);

	if (!net_eq(net, &init_net) && !rdma_dev_access_netns(ibdev, net))
		write_pnet(&ibdev->coredev.rdma_net, net);
}

u64 rxe_sr_glue_net_cookie(const struct net *net)
{
	return net->net_cookie;
}

unsigned int rxe_sr_glue_net_inum(const struct net *net)
{
	return net->ns.inum;
}
