// SPDX-License-Identifier: GPL-2.0
/*
 * rxe_sr: a device's RoCE GID table: the module's work item that rescans the tables of devices
 * whose netdev the core does not follow (it takes RTNL, so it cannot run in a notifier), and
 * the look-up of one RoCEv2 GID. C for the static work item and the reference-counted
 * ib_gid_attr, which the kernel crate does not wrap.
 */
#include <linux/workqueue.h>
#include <linux/netdevice.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_cache.h>

#include "rxe_sr_glue.h"

/*
 * ---- the RoCE GID table of a device whose netdev the core does not follow ----
 *
 * One work item for the module: it runs the Rust handler given at init, which brings the
 * GID tables up to date (rdma_roce_rescan_device sleeps: it takes RTNL).
 */
static void (*rxe_sr_gid_work_fn)(void);

static void rxe_sr_gid_work_run(struct work_struct *work)
{
	rxe_sr_gid_work_fn();
}

static DECLARE_WORK(rxe_sr_gid_work, rxe_sr_gid_work_run);

void rxe_sr_glue_gid_work_init(void (*fn)(void))
{
	rxe_sr_gid_work_fn = fn;
}

void rxe_sr_glue_gid_work_schedule(void)
{
	schedule_work(&rxe_sr_gid_work);
}

void rxe_sr_glue_gid_work_cancel_sync(void)
{
	cancel_work_sync(&rxe_sr_gid_work);
}

/*
 * Lists port 1's GIDs again from its netdev's addresses: with @del, every GID of the netdev
 * is deleted first (an address went; the core exports no way to delete one GID).
 */
void rxe_sr_glue_resync_gids(struct ib_device *ib, bool del)
{
	if (del) {
		struct net_device *ndev = ib_device_get_netdev(ib, 1);

		if (ndev) {
			roce_del_all_netdev_gids(ib, 1, ndev);
			dev_put(ndev);
		}
	}
	rdma_roce_rescan_device(ib);
}

int rxe_sr_glue_roce_v2_gid(struct ib_device *ibdev, u32 index, u8 *gid)
{
	const struct ib_gid_attr *attr = rdma_get_gid_attr(ibdev, 1, index);
	int ret = 0;

	if (IS_ERR(attr))
		return PTR_ERR(attr);
	if (attr->gid_type == IB_GID_TYPE_ROCE_UDP_ENCAP)
		memcpy(gid, attr->gid.raw, 16);
	else
		ret = -EINVAL;
	rdma_put_gid_attr(attr);
	return ret;
}
