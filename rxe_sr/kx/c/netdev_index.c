// SPDX-License-Identifier: GPL-2.0
/*
 * rxe_sr: which netdev each rxe_sr device is bound to, looked up from either side: an RCU hash
 * table with netdev trackers. C for the RCU list and hash-table macros, which have no Rust API
 * in 6.12; it ends if the core's own index (ib_device_set_netdev) can serve rxe_sr (see below
 * why it cannot today).
 */
#include <linux/netdevice.h>
#include <linux/hashtable.h>
#include <linux/slab.h>
#include <linux/rcupdate.h>
#include <rdma/ib_verbs.h>

#include "rxe_sr_glue.h"

/*
 * Which netdev each rxe_sr device is bound to. The core keeps such an index too, filled by
 * ib_device_set_netdev() and read by ib_device_get_by_netdev(ndev, driver_id); rdma_rxe
 * reads it with its own driver id in its netdev notifier and its receive path and takes
 * what it finds for a struct rxe_dev (writing port state into it on NETDEV_UP, DOWN and
 * CHANGEMTU). rxe_sr's devices carry that driver id too (the stock rdma-core provider
 * binds by it), so they stay out of the core's index: the core reads a port's netdev
 * through the get_netdev op, and rxe_sr looks its devices up here. Each link holds a
 * reference on its netdev from bind (before registration) to unbind (dealloc_driver);
 * links are freed after an RCU grace period, and lookups take a device reference only
 * while the device is registered (ib_device_try_get), as the core's do.
 */
struct rxe_sr_ndev_link {
	struct hlist_node by_ndev;
	struct hlist_node by_ibdev;
	struct ib_device *ibdev;
	struct net_device *ndev;
	netdevice_tracker tracker;
	struct rcu_head rcu;
};

static DEFINE_HASHTABLE(rxe_sr_ndev_links, 5);
static DEFINE_HASHTABLE(rxe_sr_ibdev_links, 5);
static DEFINE_SPINLOCK(rxe_sr_ndev_links_lock);

int rxe_sr_glue_ndev_bind(struct ib_device *ibdev, struct net_device *ndev)
{
	struct rxe_sr_ndev_link *l = kzalloc(sizeof(*l), GFP_KERNEL);

	if (!l)
		return -ENOMEM;
	l->ibdev = ibdev;
	l->ndev = ndev;
	netdev_hold(ndev, &l->tracker, GFP_KERNEL);
	spin_lock(&rxe_sr_ndev_links_lock);
	hash_add_rcu(rxe_sr_ndev_links, &l->by_ndev, (uintptr_t)ndev);
	hash_add_rcu(rxe_sr_ibdev_links, &l->by_ibdev, (uintptr_t)ibdev);
	spin_unlock(&rxe_sr_ndev_links_lock);
	return 0;
}

/* Drops @ibdev's binding, if it has one (not on an error before bind). */
void rxe_sr_glue_ndev_unbind(struct ib_device *ibdev)
{
	struct rxe_sr_ndev_link *l, *found = NULL;

	spin_lock(&rxe_sr_ndev_links_lock);
	hash_for_each_possible(rxe_sr_ibdev_links, l, by_ibdev, (uintptr_t)ibdev) {
		if (l->ibdev == ibdev) {
			found = l;
			hash_del_rcu(&l->by_ndev);
			hash_del_rcu(&l->by_ibdev);
			break;
		}
	}
	spin_unlock(&rxe_sr_ndev_links_lock);
	if (found) {
		netdev_put(found->ndev, &found->tracker);
		kfree_rcu(found, rcu);
	}
}

/* ib_device_ops.get_netdev: @ibdev's netdev, referenced; NULL once unbound. */
struct net_device *rxe_sr_glue_get_netdev(struct ib_device *ibdev, u32 port)
{
	struct rxe_sr_ndev_link *l;
	struct net_device *ndev = NULL;

	rcu_read_lock();
	hash_for_each_possible_rcu(rxe_sr_ibdev_links, l, by_ibdev, (uintptr_t)ibdev) {
		if (l->ibdev == ibdev) {
			ndev = l->ndev;
			dev_hold(ndev);
			break;
		}
	}
	rcu_read_unlock();
	return ndev;
}

/* The registered rxe_sr device bound to @ndev, referenced; NULL if none. Any context. */
struct ib_device *rxe_sr_glue_ib_device_by_netdev(struct net_device *ndev)
{
	struct rxe_sr_ndev_link *l;
	struct ib_device *res = NULL;

	rcu_read_lock();
	hash_for_each_possible_rcu(rxe_sr_ndev_links, l, by_ndev, (uintptr_t)ndev) {
		if (l->ndev == ndev && ib_device_try_get(l->ibdev)) {
			res = l->ibdev;
			break;
		}
	}
	rcu_read_unlock();
	return res;
}

static int rxe_sr_lower_is_ours(struct net_device *lower, struct netdev_nested_priv *priv)
{
	struct ib_device *ibdev = rxe_sr_glue_ib_device_by_netdev(lower);

	if (!ibdev)
		return 0;
	priv->data = ibdev;
	return 1;
}

/*
 * The rxe_sr device bound to a device below @ndev (a VLAN's real device, a bond's slave, at
 * any depth), referenced; NULL if none. The core lists the addresses of a port's upper
 * devices in its GID table, and their packets arrive with skb->dev the upper device.
 * Called in the UDP receive path, under RCU.
 */
struct ib_device *rxe_sr_glue_ib_device_below(struct net_device *ndev)
{
	struct netdev_nested_priv priv = { .data = NULL };

	netdev_walk_all_lower_dev_rcu(ndev, rxe_sr_lower_is_ours, &priv);
	return priv.data;
}
