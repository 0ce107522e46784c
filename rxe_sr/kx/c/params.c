// SPDX-License-Identifier: GPL-2.0
/*
 * rxe_sr: the module's parameters (recovery=, the SR pool sizes, sr_pipe_psns,
 * sr_window_psns, gbn_window_psns, dev_inflight_psns, max_objects, fec_unit, fec_depth,
 * tx_zero_copy)
 * and the per-device sysfs attributes `recovery` and `fec`. C because 6.12's `module!`
 * macro declares no parameters and an attribute group is a static table built by C macros;
 * Rust parses and names the scheme (kx/moduleparam.rs) and checks the sizes at load. Moves
 * to Rust once the kernel crate declares parameters and attributes.
 */
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/device.h>
#include <linux/sysfs.h>
#include <rdma/ib_verbs.h>

#include "rxe_sr_glue.h"

/* The values, with their defaults; Rust reads them after load (kx/moduleparam.rs). */
struct rxe_sr_params rxe_sr_params = {
	.recovery = 0,
	.sr_pool_units = 20,
	.sr_pool_blocks = 326,
	.melo_pool_blocks = 128,
	.sr_pipe_psns = 256,
	.sr_window_psns = 4096,
	.gbn_window_psns = 128,
	.dev_inflight_psns = 256,
	.max_objects = 0,
	.fec_unit = 0,
	.fec_depth = 4,
	.timer_hold = true,
};

static int rxe_sr_recovery_set(const char *val, const struct kernel_param *kp)
{
	int idx = rxe_sr_rs_recovery_parse(val);

	if (idx < 0) {
		pr_err("rxe_sr: recovery=%s: unknown scheme; use one of gbn, fasr, srnic, irn, melo\n",
		       val);
		return -EINVAL;
	}
	*(int *)kp->arg = idx;
	return 0;
}

static int rxe_sr_recovery_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%s\n", rxe_sr_rs_recovery_name(*(int *)kp->arg));
}

static const struct kernel_param_ops rxe_sr_recovery_ops = {
	.set = rxe_sr_recovery_set,
	.get = rxe_sr_recovery_get,
};

module_param_cb(recovery, &rxe_sr_recovery_ops, &rxe_sr_params.recovery, 0444);
__MODULE_PARM_TYPE(recovery, "charp");
MODULE_PARM_DESC(recovery,
	"loss recovery scheme of the devices' RC QPs: gbn (default: standard RoCEv2 "
	"go-back-N), or a selective-retransmission scheme, fasr, srnic, irn or melo, used on a "
	"QP once its peer (an rxe_sr device running the same scheme) agreed in band; toward "
	"any other peer a QP stays standard RoCEv2 go-back-N");

/* The driver's accessors, set before the first device registers (one driver). */
static struct rxe_sr_dev_accessors rxe_sr_dev_acc;

static ssize_t recovery_show(struct device *device, struct device_attribute *attr, char *buf)
{
	struct ib_device *ibdev = rdma_device_to_ibdev(device);

	return sysfs_emit(buf, "%s\n", rxe_sr_rs_recovery_name(rxe_sr_dev_acc.scheme_get(ibdev)));
}

static ssize_t recovery_store(struct device *device, struct device_attribute *attr,
			      const char *buf, size_t count)
{
	struct ib_device *ibdev = rdma_device_to_ibdev(device);
	int idx = rxe_sr_rs_recovery_parse(buf);

	if (idx < 0)
		return -EINVAL;
	rxe_sr_dev_acc.scheme_set(ibdev, idx);
	return count;
}

static DEVICE_ATTR_RW(recovery);

/* `fec`: "off", or N:D from the parameters' byte (log2 N, log2 D: a nibble each). */
static ssize_t fec_show(struct device *device, struct device_attribute *attr, char *buf)
{
	int b = rxe_sr_dev_acc.fec_get(rdma_device_to_ibdev(device));

	if (!b)
		return sysfs_emit(buf, "off\n");
	return sysfs_emit(buf, "%u:%u\n", 1u << ((b >> 4) & 0xf), 1u << (b & 0xf));
}

static ssize_t fec_store(struct device *device, struct device_attribute *attr,
			 const char *buf, size_t count)
{
	int err = rxe_sr_dev_acc.fec_set(rdma_device_to_ibdev(device), buf);

	return err ? err : count;
}

static DEVICE_ATTR_RW(fec);

static struct attribute *rxe_sr_dev_attrs[] = {
	&dev_attr_recovery.attr,
	&dev_attr_fec.attr,
	NULL,
};

static const struct attribute_group rxe_sr_dev_attr_group = {
	.attrs = rxe_sr_dev_attrs,
};

/* The driver's attribute group (ib_device_ops.device_group), over the driver's accessors. */
const struct attribute_group *rxe_sr_glue_device_group(const struct rxe_sr_dev_accessors *acc)
{
	rxe_sr_dev_acc = *acc;
	return &rxe_sr_dev_attr_group;
}

module_param_named(sr_pool_units, rxe_sr_params.sr_pool_units, uint, 0444);
MODULE_PARM_DESC(sr_pool_units,
	"FaSR: level-1 SR state units in each device's shared SR pool, 1..65534 (default 20, "
	"the FaSR paper's)");

module_param_named(sr_pool_blocks, rxe_sr_params.sr_pool_blocks, uint, 0444);
MODULE_PARM_DESC(sr_pool_blocks,
	"FaSR: level-2 bitmap blocks (16 bits each) in each device's shared SR pool, 1..65534 "
	"(default 326: the FaSR paper's 70 and a chain across a whole 4096-PSN SR window)");

module_param_named(melo_pool_blocks, rxe_sr_params.melo_pool_blocks, uint, 0444);
MODULE_PARM_DESC(melo_pool_blocks,
	"MELO: bits blocks (8 bits each) in each device's shared bits pool, 1..65534 "
	"(default 128, MELO's 1 Kb pool)");

module_param_named(sr_pipe_psns, rxe_sr_params.sr_pipe_psns, uint, 0444);
MODULE_PARM_DESC(sr_pipe_psns,
	"FaSR: PSNs a requester sends past the highest PSN known received (READ requests "
	"excepted), 0 up to sr_window_psns (0: the SR window alone; default 256)");

module_param_named(sr_window_psns, rxe_sr_params.sr_window_psns, uint, 0444);
MODULE_PARM_DESC(sr_window_psns,
	"Every SR scheme: the SR window, PSNs a requester keeps outstanding in the SR format "
	"and its responder tracks past RCV-NXT; toward a peer the smaller of the two ends' "
	"windows is used. A power of two, 512..4194304 and at least gbn_window_psns "
	"(default 4096). Each SR QP keeps five to seven bitmaps of this many bits");

module_param_named(gbn_window_psns, rxe_sr_params.gbn_window_psns, uint, 0444);
MODULE_PARM_DESC(gbn_window_psns,
	"Every scheme in the standard format (go-back-N): PSNs a requester lets be "
	"outstanding past the oldest unacknowledged one, 128..1024 (default 128, rdma_rxe's)");

module_param_named(dev_inflight_psns, rxe_sr_params.dev_inflight_psns, uint, 0444);
MODULE_PARM_DESC(dev_inflight_psns,
	"Every scheme: PSNs in flight across all of a device's RC requesters before a new "
	"message waits for an acknowledgment to give room back, 0..4194304 (0: no bound; "
	"default 256)");

module_param_named(fec_unit, rxe_sr_params.fec_unit, uint, 0444);
MODULE_PARM_DESC(fec_unit,
	"FEC (LoWAR): packets per coding unit of each RC and UC QP's repair packets (its "
	"requests, and on RC its READ responses and atomic ACKs), 4, 8, 16 or 32 (32: LoWAR's "
	"32:1), sent only to a peer that takes them; 0 (default): no FEC");

module_param_named(fec_depth, rxe_sr_params.fec_depth, uint, 0444);
MODULE_PARM_DESC(fec_depth,
	"FEC: coding units interleaved, 1, 2, 4 or 8 (a burst of this many losses costs each "
	"unit one packet; default 4)");

module_param_named(timer_hold, rxe_sr_params.timer_hold, bool, 0444);
MODULE_PARM_DESC(timer_hold,
	"Every scheme: a requester's deadline (retransmission timeout, probe, RNR wait) that "
	"passes while the device's receive queue holds datagrams waits until the receive work "
	"has taken those queued by then (default Y; N: it acts at once)");

/* Read at every transmit (kx/rxe/moduleparam.rs): it may be changed at any time. */
bool rxe_sr_tx_zero_copy = true;
module_param_named(tx_zero_copy, rxe_sr_tx_zero_copy, bool, 0644);
MODULE_PARM_DESC(tx_zero_copy,
	"Every device: a packet's payload of at least 512 bytes read from a memory region "
	"goes by reference, the region's pages attached to the datagram and held until it is "
	"freed, not copied (default Y; N: copied, as rdma_rxe does; may be changed at any "
	"time; a packet coded for FEC is always copied)");

module_param_named(max_objects, rxe_sr_params.max_objects, uint, 0444);
MODULE_PARM_DESC(max_objects,
	"Every device created from now on: at most this many QPs, CQs, SRQs, PDs, MRs, MWs "
	"and AHs each, reported as max_qp, max_cq and so on (to reach every limit on purpose); "
	"0 (default): rdma_rxe's limits, which a larger value does not raise");

