// SPDX-License-Identifier: GPL-2.0
/*
 * rxe_sr: a device's home network namespace, the one place the module writes a core field
 * (see below). C for write_pnet, an RCU pointer publication into the core's ib_device
 * (rcu_assign_pointer), which 6.12's kernel crate does not wrap. A netdev's namespace and a
 * namespace's identity are read in Rust (kx/net_namespace.rs).
 */
#include <linux/netdevice.h>
#include <net/net_namespace.h>
#include <rdma/ib_verbs.h>

#include "rxe_sr_glue.h"

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
