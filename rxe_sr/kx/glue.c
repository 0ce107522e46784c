// SPDX-License-Identifier: GPL-2.0
/*
 * rxe_sr C glue: static inlines, macros and the static tables other kernel subsystems link
 * into their lists. Logic stays in Rust; each function here is a few lines of plumbing.
 */
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/netdevice.h>
#include <linux/if_vlan.h>
#include <linux/if_arp.h>
#include <linux/err.h>
#include <linux/skbuff.h>
#include <net/udp_tunnel.h>
#include <net/net_namespace.h>
#include <net/udp.h>
#include <linux/mutex.h>
#include <linux/user_namespace.h>
#include <rdma/rdma_netlink.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>
#include <linux/vmalloc.h>
#include <linux/cache.h>
#include <linux/xarray.h>
#include <net/ip.h>
#include <net/route.h>
#include <net/ipv6.h>
#include <net/ip6_route.h>
#include <net/addrconf.h>
#include <linux/inetdevice.h>
#include <linux/udp.h>
#include <linux/delay.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_umem_odp.h>
#include <linux/hmm.h>
#include <rdma/ib_cache.h>
#include <linux/timer.h>
#include <linux/workqueue.h>
#include <linux/wait_bit.h>
#include <linux/jiffies.h>
#include <linux/ktime.h>
#include <linux/slab.h>
#include <linux/highmem.h>
#include <linux/scatterlist.h>
#include <linux/crc32.h>
#include <linux/ratelimit.h>
#include <linux/hashtable.h>
#include <crypto/hash.h>

#include "rxe_sr_glue.h"

/* ---- module parameter `recovery`: parsed and named by Rust (rxe_sr/kx/moduleparam.rs) ---- */

static int rxe_sr_recovery; /* index into proto::recovery::scheme::Scheme::ALL; 0 is gbn */

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

module_param_cb(recovery, &rxe_sr_recovery_ops, &rxe_sr_recovery, 0444);
__MODULE_PARM_TYPE(recovery, "charp");
MODULE_PARM_DESC(recovery,
	"loss recovery scheme of the devices' RC QPs: gbn (default: standard RoCEv2 "
	"go-back-N), or a selective-retransmission scheme, fasr, srnic, irn or melo, used on a "
	"QP once its peer (an rxe_sr device running the same scheme) agreed in band; toward "
	"any other peer a QP stays standard RoCEv2 go-back-N");

int rxe_sr_glue_recovery(void)
{
	return rxe_sr_recovery;
}

/* ---- the device attribute `recovery` (/sys/class/infiniband/DEV/recovery) ---- */

/* The driver's accessors, set before the first device registers (one driver). */
static int (*rxe_sr_dev_scheme_get)(struct ib_device *ibdev);
static void (*rxe_sr_dev_scheme_set)(struct ib_device *ibdev, int index);

static ssize_t recovery_show(struct device *device, struct device_attribute *attr, char *buf)
{
	struct ib_device *ibdev = rdma_device_to_ibdev(device);

	return sysfs_emit(buf, "%s\n", rxe_sr_rs_recovery_name(rxe_sr_dev_scheme_get(ibdev)));
}

static ssize_t recovery_store(struct device *device, struct device_attribute *attr,
			      const char *buf, size_t count)
{
	struct ib_device *ibdev = rdma_device_to_ibdev(device);
	int idx = rxe_sr_rs_recovery_parse(buf);

	if (idx < 0)
		return -EINVAL;
	rxe_sr_dev_scheme_set(ibdev, idx);
	return count;
}

static DEVICE_ATTR_RW(recovery);

static struct attribute *rxe_sr_dev_attrs[] = {
	&dev_attr_recovery.attr,
	NULL,
};

static const struct attribute_group rxe_sr_dev_attr_group = {
	.attrs = rxe_sr_dev_attrs,
};

/* The driver's attribute group (ib_device_ops.device_group), over the driver's accessors. */
const struct attribute_group *rxe_sr_glue_device_group(int (*get)(struct ib_device *),
							void (*set)(struct ib_device *, int))
{
	rxe_sr_dev_scheme_get = get;
	rxe_sr_dev_scheme_set = set;
	return &rxe_sr_dev_attr_group;
}

/* ---- pool sizes: checked by Rust at load (rxe_sr_main.rs) ---- */

static unsigned int rxe_sr_sr_pool_units = 20;
module_param_named(sr_pool_units, rxe_sr_sr_pool_units, uint, 0444);
MODULE_PARM_DESC(sr_pool_units,
	"FaSR: level-1 SR state units in each device's shared SR pool, 1..65534 (default 20, "
	"the FaSR paper's)");

static unsigned int rxe_sr_sr_pool_blocks = 70;
module_param_named(sr_pool_blocks, rxe_sr_sr_pool_blocks, uint, 0444);
MODULE_PARM_DESC(sr_pool_blocks,
	"FaSR: level-2 bitmap blocks (16 bits each) in each device's shared SR pool, 1..65534 "
	"(default 70, the FaSR paper's)");

static unsigned int rxe_sr_melo_pool_blocks = 128;
module_param_named(melo_pool_blocks, rxe_sr_melo_pool_blocks, uint, 0444);
MODULE_PARM_DESC(melo_pool_blocks,
	"MELO: bits blocks (8 bits each) in each device's shared bits pool, 1..65534 "
	"(default 128, MELO's 1 Kb pool)");

static unsigned int rxe_sr_sr_pipe_psns = 256;
module_param_named(sr_pipe_psns, rxe_sr_sr_pipe_psns, uint, 0444);
MODULE_PARM_DESC(sr_pipe_psns,
	"FaSR: PSNs a requester sends past the highest PSN known received (READ requests "
	"excepted), 0..512 (0: the 512-PSN SR window alone; default 256)");

unsigned int rxe_sr_glue_sr_pipe_psns(void)
{
	return rxe_sr_sr_pipe_psns;
}

static unsigned int rxe_sr_dev_inflight_psns = 256;
module_param_named(dev_inflight_psns, rxe_sr_dev_inflight_psns, uint, 0444);
MODULE_PARM_DESC(dev_inflight_psns,
	"Every scheme: PSNs in flight across all of a device's RC requesters before a new "
	"message waits for an acknowledgment to give room back, 0..4194304 (0: no bound; "
	"default 256)");

unsigned int rxe_sr_glue_dev_inflight_psns(void)
{
	return rxe_sr_dev_inflight_psns;
}

static unsigned int rxe_sr_max_objects;
module_param_named(max_objects, rxe_sr_max_objects, uint, 0444);
MODULE_PARM_DESC(max_objects,
	"Every device created from now on: at most this many QPs, CQs, SRQs, PDs, MRs, MWs "
	"and AHs each, reported as max_qp, max_cq and so on (to reach every limit on purpose); "
	"0 (default): rdma_rxe's limits, which a larger value does not raise");

unsigned int rxe_sr_glue_max_objects(void)
{
	return rxe_sr_max_objects;
}

unsigned int rxe_sr_glue_sr_pool_units(void)
{
	return rxe_sr_sr_pool_units;
}

unsigned int rxe_sr_glue_sr_pool_blocks(void)
{
	return rxe_sr_sr_pool_blocks;
}

unsigned int rxe_sr_glue_melo_pool_blocks(void)
{
	return rxe_sr_melo_pool_blocks;
}

/* ---- `rdma link add NAME type rxe_sr netdev DEV` ---- */

/* The module's one link type; its newlink is the Rust handler given at registration. */
static int (*rxe_sr_newlink_fn)(const char *ibdev_name, struct net_device *ndev);

static int rxe_sr_newlink(const char *ibdev_name, struct net_device *ndev)
{
	return rxe_sr_newlink_fn(ibdev_name, ndev);
}

static struct rdma_link_ops rxe_sr_link_ops = {
	.type = "rxe_sr",
	.newlink = rxe_sr_newlink,
};

void rxe_sr_glue_link_register(int (*newlink)(const char *ibdev_name, struct net_device *ndev))
{
	rxe_sr_newlink_fn = newlink;
	rdma_link_register(&rxe_sr_link_ops);
}

void rxe_sr_glue_link_unregister(void)
{
	rdma_link_unregister(&rxe_sr_link_ops);
}

/* ---- netdev events: up/down/MTU/unregister of the devices under rxe_sr links ---- */

/* The module's one netdev notifier; it calls the Rust handler given at registration. */
static int (*rxe_sr_netdev_event_fn)(unsigned long event, struct net_device *ndev);

static int rxe_sr_netdev_notify(struct notifier_block *nb, unsigned long event, void *arg)
{
	return rxe_sr_netdev_event_fn(event, netdev_notifier_info_to_dev(arg));
}

static struct notifier_block rxe_sr_netdev_notifier = {
	.notifier_call = rxe_sr_netdev_notify,
};

int rxe_sr_glue_netdev_notifier_register(int (*fn)(unsigned long event, struct net_device *ndev))
{
	rxe_sr_netdev_event_fn = fn;
	return register_netdevice_notifier(&rxe_sr_netdev_notifier);
}

void rxe_sr_glue_netdev_notifier_unregister(void)
{
	unregister_netdevice_notifier(&rxe_sr_netdev_notifier);
}

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

bool rxe_sr_glue_netdev_is_ether(const struct net_device *ndev)
{
	return ndev->type == ARPHRD_ETHER;
}

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

/* ---- network namespaces: the namespace being dismantled, a netdev's namespace ---- */

/* The module's one pernet subsystem; its exit is the Rust handler given at registration. */
static void (*rxe_sr_pernet_exit_fn)(struct net *net);

static void __net_exit rxe_sr_pernet_exit(struct net *net)
{
	rxe_sr_pernet_exit_fn(net);
}

static struct pernet_operations rxe_sr_pernet_ops = {
	.exit = rxe_sr_pernet_exit,
};

int rxe_sr_glue_pernet_register(void (*exit)(struct net *net))
{
	rxe_sr_pernet_exit_fn = exit;
	return register_pernet_subsys(&rxe_sr_pernet_ops);
}

void rxe_sr_glue_pernet_unregister(void)
{
	unregister_pernet_subsys(&rxe_sr_pernet_ops);
}

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

static_assert((int)RXE_SR_MAD_RESULT_SUCCESS == (int)IB_MAD_RESULT_SUCCESS);
static_assert((int)RXE_SR_MAD_RESULT_REPLY == (int)IB_MAD_RESULT_REPLY);

/* ---- device references (static inlines) ---- */

bool rxe_sr_glue_ib_device_try_get(struct ib_device *dev)
{
	return ib_device_try_get(dev);
}

void rxe_sr_glue_msleep(unsigned int ms)
{
	msleep(ms);
}

/* ---- the module's one global mutex (kx::global_mutex) ---- */

static DEFINE_MUTEX(rxe_sr_global_mutex);

void rxe_sr_glue_global_lock(void)
{
	mutex_lock(&rxe_sr_global_mutex);
}

void rxe_sr_glue_global_unlock(void)
{
	mutex_unlock(&rxe_sr_global_mutex);
}

/* ---- RoCEv2 UDP sockets, a pair per network namespace (udp_sock_create: static inline) ---- */

struct socket *rxe_sr_glue_udp_tunnel_open(struct net *net, bool ipv6, u16 port,
					   int (*encap_rcv)(struct sock *sk, struct sk_buff *skb))
{
	struct udp_port_cfg udp_cfg = { };
	struct udp_tunnel_sock_cfg tnl_cfg = { };
	struct socket *sock;
	int err;

	udp_cfg.family = ipv6 ? AF_INET6 : AF_INET;
	udp_cfg.ipv6_v6only = ipv6;
	udp_cfg.local_udp_port = htons(port);
	err = udp_sock_create(net, &udp_cfg, &sock);
	if (err < 0)
		return ERR_PTR(err);

	tnl_cfg.encap_type = 1;
	tnl_cfg.encap_rcv = encap_rcv;
	setup_udp_tunnel_sock(net, sock, &tnl_cfg);
	return sock;
}

/*
 * Who holds UDP @port (any address) in @net, written to @buf: the function a kernel
 * tunnel socket hands its datagrams to, with its module ("rxe_udp_encap_recv [rdma_rxe]"),
 * or a user socket's owner. Returns false when no socket was found (the port was freed
 * meanwhile, or is held by a socket bound to one address only).
 */
bool rxe_sr_glue_udp_port_owner(struct net *net, bool ipv6, u16 port, char *buf, size_t len)
{
	int (*encap)(struct sock *sk, struct sk_buff *skb);
	struct sock *sk;
	bool found = false;

	rcu_read_lock();
#if IS_ENABLED(CONFIG_IPV6)
	if (ipv6)
		sk = __udp6_lib_lookup(net, &in6addr_any, 0, &in6addr_any, htons(port), 0, 0,
				       net->ipv4.udp_table, NULL);
	else
#endif
		sk = __udp4_lib_lookup(net, 0, 0, 0, htons(port), 0, 0, net->ipv4.udp_table,
				       NULL);
	if (sk) {
		/* UDP sockets are freed after an RCU grace period (SOCK_RCU_FREE). */
		encap = READ_ONCE(udp_sk(sk)->encap_rcv);
		if (encap)
			snprintf(buf, len, "%ps", encap);
		else
			snprintf(buf, len, "a %s socket of uid %u",
				 sk->sk_kern_sock ? "kernel" : "user-space",
				 from_kuid_munged(&init_user_ns, sk->sk_uid));
		found = true;
	}
	rcu_read_unlock();
	return found;
}

void rxe_sr_glue_udp_tunnel_close(struct socket *sock)
{
	udp_tunnel_sock_release(sock);
}

void rxe_sr_glue_skb_drop(struct sk_buff *skb)
{
	kfree_skb(skb);
}

/* ---- static inlines ---- */

bool rxe_sr_glue_netif_running(const struct net_device *ndev)
{
	return netif_running(ndev);
}

bool rxe_sr_glue_netif_carrier_ok(const struct net_device *ndev)
{
	return netif_carrier_ok(ndev);
}

bool rxe_sr_glue_is_vlan_dev(const struct net_device *ndev)
{
	return is_vlan_dev(ndev);
}

void rxe_sr_glue_dev_put(struct net_device *ndev)
{
	dev_put(ndev);
}

/* ---- verbs plumbing: udata, attribute bundles, mmap entries, vmalloc ---- */

struct ib_udata *rxe_sr_glue_attrs_udata(struct uverbs_attr_bundle *attrs)
{
	return attrs ? &attrs->driver_udata : NULL;
}

struct ib_ucontext *rxe_sr_glue_attrs_ucontext(struct uverbs_attr_bundle *attrs)
{
	return attrs ? attrs->context : NULL;
}

int rxe_sr_glue_copy_to_udata(struct ib_udata *udata, const void *src, size_t len)
{
	if (!udata || udata->outlen < len)
		return -EINVAL;
	return ib_copy_to_udata(udata, (void *)src, len);
}

int rxe_sr_glue_copy_from_udata(struct ib_udata *udata, void *dst, size_t len)
{
	if (!udata || udata->inlen < len)
		return -EINVAL;
	return ib_copy_from_udata(dst, udata, len);
}

int rxe_sr_glue_copy_to_user(u64 uaddr, const void *src, size_t len)
{
	return copy_to_user(u64_to_user_ptr(uaddr), src, len) ? -EFAULT : 0;
}

u64 rxe_sr_glue_mmap_offset(const struct rdma_user_mmap_entry *entry)
{
	return rdma_user_mmap_get_offset(entry);
}

/*
 * A zeroed buffer user space may map (VM_USERMAP, for remap_vmalloc_range), its pages
 * charged to the caller's memory cgroup (GFP_KERNEL_ACCOUNT: rings are sized by the
 * user). vfree() frees it, pages and array included (VM_MAP_PUT_PAGES).
 */
void *rxe_sr_glue_vmalloc_user(size_t size)
{
	unsigned int n = PAGE_ALIGN(size) >> PAGE_SHIFT, i;
	struct page **pages;
	void *addr;

	if (!size || size > (size_t)INT_MAX)
		return NULL;
	pages = kvmalloc_array(n, sizeof(*pages), GFP_KERNEL_ACCOUNT);
	if (!pages)
		return NULL;
	for (i = 0; i < n; i++) {
		pages[i] = alloc_page(GFP_KERNEL_ACCOUNT | __GFP_ZERO);
		if (!pages[i])
			goto err;
	}
	addr = vmap(pages, n, VM_MAP | VM_MAP_PUT_PAGES | VM_USERMAP, PAGE_KERNEL);
	if (addr)
		return addr;
err:
	while (i--)
		__free_page(pages[i]);
	kvfree(pages);
	return NULL;
}

void rxe_sr_glue_cq_event(struct ib_cq *cq, unsigned int type)
{
	struct ib_event ev = {
		.device = cq->device,
		.element.cq = cq,
		.event = type,
	};

	if (cq->event_handler)
		cq->event_handler(&ev, cq->cq_context);
}

void rxe_sr_glue_srq_event(struct ib_srq *srq, unsigned int type)
{
	struct ib_event ev = {
		.device = srq->device,
		.element.srq = srq,
		.event = type,
	};

	if (srq->event_handler)
		srq->event_handler(&ev, srq->srq_context);
}

void rxe_sr_glue_cq_comp(struct ib_cq *cq)
{
	if (cq->comp_handler)
		cq->comp_handler(cq, cq->cq_context);
}

u32 rxe_sr_glue_cache_line_size(void)
{
	return cache_line_size();
}

/* ---- xarray (allocating): static inlines ---- */

void rxe_sr_glue_xa_init_alloc1(struct xarray *xa)
{
	xa_init_flags(xa, XA_FLAGS_ALLOC1);
}

int rxe_sr_glue_xa_alloc_cyclic(struct xarray *xa, u32 *id, void *entry, u32 min, u32 max,
				u32 *next)
{
	int ret = xa_alloc_cyclic(xa, id, entry, XA_LIMIT(min, max), next, GFP_KERNEL);

	return ret < 0 ? ret : 0; /* 1 only says the indices wrapped */
}

/* The first entry at or above *index (reserved slots skipped), its index in *index. */
void *rxe_sr_glue_xa_first(struct xarray *xa, unsigned long *index)
{
	return xa_find(xa, index, ULONG_MAX, XA_PRESENT);
}

struct ib_ucontext *rxe_sr_glue_udata_ucontext(struct ib_udata *udata)
{
	struct uverbs_attr_bundle *attrs;

	if (!udata)
		return NULL;
	attrs = container_of(udata, struct uverbs_attr_bundle, driver_udata);
	return attrs->context;
}

struct net_device *rxe_sr_glue_skb_dev(struct sk_buff *skb)
{
	return skb->dev;
}

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

struct rxe_sr_egress {
	const void *addr;
	bool v6;
	struct net_device *found;
};

/* @dev holds the IPv4 (4 bytes, network order) or IPv6 address @addr. Under RCU. */
static bool rxe_sr_dev_has_addr(struct net_device *dev, const void *addr, bool v6)
{
	const struct in_ifaddr *ifa;
	struct in_device *in_dev;
	__be32 a4;

	if (v6)
		return ipv6_chk_addr(dev_net(dev), addr, dev, 0);
	in_dev = __in_dev_get_rcu(dev);
	if (!in_dev)
		return false;
	memcpy(&a4, addr, sizeof(a4));
	in_dev_for_each_ifa_rcu(ifa, in_dev) {
		if (ifa->ifa_local == a4)
			return true;
	}
	return false;
}

static int rxe_sr_upper_has_addr(struct net_device *upper, struct netdev_nested_priv *priv)
{
	struct rxe_sr_egress *e = priv->data;

	if (!rxe_sr_dev_has_addr(upper, e->addr, e->v6))
		return 0;
	e->found = upper;
	return 1;
}

/*
 * The device a datagram from source address @addr leaves by: @ndev when the address is its
 * own, else the upper device of @ndev (VLAN, bond, at any depth) that holds it, so that
 * the frame is tagged or balanced as the address's device requires (rdma_rxe sends from
 * the GID's netdev likewise); @ndev when none does. Returned with a reference held.
 */
static struct net_device *rxe_sr_egress_dev(struct net_device *ndev, const void *addr, bool v6)
{
	struct rxe_sr_egress e = { .addr = addr, .v6 = v6, .found = ndev };
	struct netdev_nested_priv priv = { .data = &e };

	rcu_read_lock();
	if (!rxe_sr_dev_has_addr(ndev, addr, v6))
		netdev_walk_all_upper_dev_rcu(ndev, rxe_sr_upper_has_addr, &priv);
	dev_hold(e.found);
	rcu_read_unlock();
	return e.found;
}

/* ---- transmit: RoCEv2 datagrams around IB bytes (as rdma_rxe's prepare4/prepare6) ---- */

static struct sk_buff *rxe_sr_alloc_datagram(struct net_device *ndev, unsigned int iphdr_len,
					     u16 sport, const void *ib, size_t len)
{
	unsigned int hdr = LL_RESERVED_SPACE(ndev) + iphdr_len + sizeof(struct udphdr);
	struct sk_buff *skb = alloc_skb(hdr + len + ndev->needed_tailroom, GFP_KERNEL);
	struct udphdr *udph;

	if (!skb)
		return NULL;
	skb_reserve(skb, hdr);
	/* Without @ib the caller writes all @len bytes itself (rxe_sr_glue_skb_data). */
	if (ib)
		skb_put_data(skb, ib, len);
	else
		skb_put(skb, len);
	skb->dev = ndev;
	__skb_push(skb, sizeof(*udph));
	skb_reset_transport_header(skb);
	udph = udp_hdr(skb);
	udph->source = htons(sport);
	udph->dest = htons(4791);
	udph->len = htons(skb->len);
	udph->check = 0;
	return skb;
}

/*
 * Builds an skb holding IPv4 + UDP headers and the @len IB bytes at @ib (BTH .. ICRC, the
 * ICRC not yet filled), routed out of @ndev unless @local (loopback: the receive path takes
 * it directly). The IP header, ID included, is complete, so the caller can compute the ICRC
 * before sending it with rxe_sr_glue_xmit(). Returns the skb or an ERR_PTR.
 */
struct sk_buff *rxe_sr_glue_build_v4(struct net_device *port_ndev, __be32 saddr, __be32 daddr,
				     u16 sport, u8 tos, u8 ttl, const void *ib, size_t len,
				     bool local)
{
	struct net_device *ndev = local ? port_ndev : rxe_sr_egress_dev(port_ndev, &saddr, false);
	struct rtable *rt = NULL;
	struct sk_buff *skb;
	struct iphdr *iph;

	if (!local) {
		struct flowi4 fl = {};

		fl.flowi4_oif = ndev->ifindex;
		fl.saddr = saddr;
		fl.daddr = daddr;
		fl.flowi4_proto = IPPROTO_UDP;
		rt = ip_route_output_key(dev_net(ndev), &fl);
		if (IS_ERR(rt)) {
			dev_put(ndev);
			return ERR_CAST(rt);
		}
	}
	skb = rxe_sr_alloc_datagram(ndev, sizeof(*iph), sport, ib, len);
	/* The route holds its device from here (skb->dev is only a hint for the output path). */
	if (!local)
		dev_put(ndev);
	if (!skb) {
		if (rt)
			ip_rt_put(rt);
		return ERR_PTR(-ENOMEM);
	}
	skb->protocol = htons(ETH_P_IP);
	if (rt)
		skb_dst_set(skb, &rt->dst);
	memset(IPCB(skb), 0, sizeof(*IPCB(skb)));
	skb_push(skb, sizeof(*iph));
	skb_reset_network_header(skb);
	iph = ip_hdr(skb);
	iph->version = IPVERSION;
	iph->ihl = sizeof(*iph) >> 2;
	iph->tot_len = htons(skb->len);
	iph->frag_off = htons(IP_DF);
	iph->protocol = IPPROTO_UDP;
	iph->tos = tos;
	iph->daddr = daddr;
	iph->saddr = saddr;
	iph->ttl = ttl;
	__ip_select_ident(dev_net(ndev), iph, 1);
	ip_send_check(iph);
	return skb;
}

/* The IPv6 twin of rxe_sr_glue_build_v4 (addresses are 16 bytes each). */
struct sk_buff *rxe_sr_glue_build_v6(struct net_device *port_ndev, const void *saddr,
				     const void *daddr, u16 sport, u8 tclass, u8 hop_limit,
				     u32 flow_label, const void *ib, size_t len, bool local)
{
	struct net_device *ndev = local ? port_ndev : rxe_sr_egress_dev(port_ndev, saddr, true);
	struct dst_entry *dst = NULL;
	struct sk_buff *skb;
	struct ipv6hdr *ip6h;

	if (!local) {
		struct flowi6 fl6 = {};

		fl6.flowi6_oif = ndev->ifindex;
		memcpy(&fl6.saddr, saddr, sizeof(fl6.saddr));
		memcpy(&fl6.daddr, daddr, sizeof(fl6.daddr));
		fl6.flowi6_proto = IPPROTO_UDP;
		dst = ip6_route_output(dev_net(ndev), NULL, &fl6);
		if (dst->error) {
			int err = dst->error;

			dst_release(dst);
			dev_put(ndev);
			return ERR_PTR(err);
		}
	}
	skb = rxe_sr_alloc_datagram(ndev, sizeof(*ip6h), sport, ib, len);
	if (!local)
		dev_put(ndev);
	if (!skb) {
		dst_release(dst);
		return ERR_PTR(-ENOMEM);
	}
	skb->protocol = htons(ETH_P_IPV6);
	if (dst)
		skb_dst_set(skb, dst);
	memset(IP6CB(skb), 0, sizeof(*IP6CB(skb)));
	skb_push(skb, sizeof(*ip6h));
	skb_reset_network_header(skb);
	ip6h = ipv6_hdr(skb);
	ip6_flow_hdr(ip6h, tclass, htonl(flow_label));
	ip6h->payload_len = htons(skb->len - sizeof(*ip6h));
	ip6h->nexthdr = IPPROTO_UDP;
	ip6h->hop_limit = hop_limit;
	memcpy(&ip6h->saddr, saddr, sizeof(ip6h->saddr));
	memcpy(&ip6h->daddr, daddr, sizeof(ip6h->daddr));
	return skb;
}

/* The datagram's bytes (from the IP header) and their length. */
void *rxe_sr_glue_skb_data(struct sk_buff *skb, size_t *len)
{
	*len = skb->len;
	return skb->data;
}

int rxe_sr_glue_xmit(struct sk_buff *skb)
{
	struct net *net = dev_net(skb_dst(skb)->dev);
	int err = skb->protocol == htons(ETH_P_IP) ? ip_local_out(net, NULL, skb) :
						       ip6_local_out(net, NULL, skb);

	/*
	 * A positive value is the qdisc's verdict: NET_XMIT_DROP (a full queue, e.g. netem's
	 * limit) means the packet never left, reported as -ENOBUFS so that the requester offers
	 * it again instead of leaving it to loss recovery. netem's own random loss answers
	 * success (the sender cannot tell), and NET_XMIT_CN counts as sent (net_xmit_eval).
	 */
	if (err > 0)
		return net_xmit_eval(err) ? -ENOBUFS : 0;
	return err;
}

/* ---- xarray lookups under the xarray's lock (entries may be erased concurrently) ---- */

void rxe_sr_glue_xa_lock(struct xarray *xa)
{
	xa_lock(xa);
}

void rxe_sr_glue_xa_unlock(struct xarray *xa)
{
	xa_unlock(xa);
}

/* ---- the driver's work: its priority, and runs that never overlap ---- */

/*
 * Receive queues whose work last stopped at its budget with datagrams left. While there is
 * none, all of the driver's work runs on system_highpri_wq, ahead of a busy-polling
 * application as the softirq that runs rdma_rxe's receive path would be (at normal
 * priority, ACKs wait behind the application's polling). While there is one, all of it
 * runs at normal priority, as softirq hands a sustained load to ksoftirqd: a flood at port
 * 4791 then shares the CPU with user space instead of starving it, and no work of the
 * driver's starves another from a higher priority (receive at normal priority behind QP
 * work at a higher one left most QPs out of retries). Module-wide, as ksoftirqd is per
 * CPU, not per device.
 */
static atomic_t rxe_sr_backlogs = ATOMIC_INIT(0);


/* struct rxe_sr_work's flags: a run is calling fn; a run found it so and left its turn. */
#define RXE_SR_WORK_RUNNING 0
#define RXE_SR_WORK_AGAIN 1

static void rxe_sr_work_queue(struct rxe_sr_work *w)
{
	if (atomic_read(&rxe_sr_backlogs))
		queue_work(w->lo_wq, &w->lo);
	else
		queue_work(system_highpri_wq, &w->hi);
}

/*
 * Queued on one workqueue while a run from the other goes on, the work can run twice at
 * once: the second leaves its turn to the first (AGAIN), which queues the work again when
 * it is done. Every access to @w is inside the work function, so that cancelling both
 * work_structs waits for all of them.
 */
static void rxe_sr_work_run(struct rxe_sr_work *w)
{
	bool again;

	if (test_and_set_bit_lock(RXE_SR_WORK_RUNNING, &w->flags)) {
		set_bit(RXE_SR_WORK_AGAIN, &w->flags);
		/*
		 * Pairs with the barrier after the unlock below: either that run sees AGAIN,
		 * or this one sees RUNNING clear and takes the turn itself.
		 */
		smp_mb__after_atomic();
		if (test_and_set_bit_lock(RXE_SR_WORK_RUNNING, &w->flags))
			return;
	}
	clear_bit(RXE_SR_WORK_AGAIN, &w->flags);
	/*
	 * Orders the clear before what fn reads: a turn left after this point (AGAIN set
	 * again) is seen below, one left before it finds its data read by this run.
	 */
	smp_mb__after_atomic();
	again = w->fn(w->owner);
	clear_bit_unlock(RXE_SR_WORK_RUNNING, &w->flags);
	/* Orders the unlock before the look at AGAIN; pairs with the barrier above. */
	smp_mb__after_atomic();
	if (again || test_bit(RXE_SR_WORK_AGAIN, &w->flags))
		rxe_sr_work_queue(w);
}

static void rxe_sr_work_hi_fn(struct work_struct *work)
{
	rxe_sr_work_run(container_of(work, struct rxe_sr_work, hi));
}

static void rxe_sr_work_lo_fn(struct work_struct *work)
{
	rxe_sr_work_run(container_of(work, struct rxe_sr_work, lo));
}

/*
 * A macro, as INIT_WORK is: each place that initialises a kind of work (receive, QP timer)
 * gets lockdep classes of its own, so that waiting for a QP's work never looks to lockdep
 * like waiting for the receive work.
 */
#define rxe_sr_work_init(w, lo_wq_, fn_, owner_)			\
	do {								\
		INIT_WORK(&(w)->hi, rxe_sr_work_hi_fn);			\
		INIT_WORK(&(w)->lo, rxe_sr_work_lo_fn);			\
		(w)->lo_wq = (lo_wq_);					\
		(w)->flags = 0;						\
		(w)->fn = (fn_);					\
		(w)->owner = (owner_);					\
	} while (0)

/* Waits for every run; the work never runs again (queueing it does nothing). */
static void rxe_sr_work_disable(struct rxe_sr_work *w)
{
	/* A run of lo may queue hi again, and one of hi lo: each is disabled before its wait. */
	disable_work(&w->hi);
	disable_work(&w->lo);
	disable_work_sync(&w->hi);
	disable_work_sync(&w->lo);
}

/* ---- the receive queue ---- */

static bool rxe_sr_rx_run(void *owner)
{
	struct rxe_sr_rx *rx = owner;
	bool full = rx->fn(rx->owner);

	/* A datagram queued after this look queues the work itself. */
	if (skb_queue_empty_lockless(&rx->q)) {
		if (rx->backlog) {
			rx->backlog = false;
			atomic_dec(&rxe_sr_backlogs);
		}
		return false;
	}
	if (full && !rx->backlog) {
		rx->backlog = true;
		atomic_inc(&rxe_sr_backlogs);
	}
	return true;
}

void rxe_sr_glue_rx_init(struct rxe_sr_rx *rx, bool (*fn)(void *owner), void *owner)
{
	/* A run that took nothing would ask for another forever. */
	BUILD_BUG_ON(RXE_SR_RX_BUDGET < 1);
	skb_queue_head_init(&rx->q);
	/*
	 * At normal priority the receive work goes to an unbound worker of its own, not behind
	 * every QP's work in system_wq's queue (it kept more goodput with many QPs under loss).
	 */
	rxe_sr_work_init(&rx->work, system_unbound_wq, rxe_sr_rx_run, rx);
	rx->backlog = false;
	rx->fn = fn;
	rx->owner = owner;
}

int rxe_sr_glue_rx_queue(struct rxe_sr_rx *rx, struct sk_buff *skb)
{
	/* A racy read is fine: the bound only keeps a flood from growing the queue forever. */
	if (skb_queue_len_lockless(&rx->q) >= RXE_SR_RX_QUEUE_MAX) {
		kfree_skb(skb);
		return -ENOBUFS;
	}
	skb_queue_tail(&rx->q, skb);
	rxe_sr_work_queue(&rx->work);
	return 0;
}

void rxe_sr_glue_cond_resched(void)
{
	cond_resched();
}

static DEFINE_RATELIMIT_STATE(rxe_sr_remote_warnings, DEFAULT_RATELIMIT_INTERVAL,
			      DEFAULT_RATELIMIT_BURST);

bool rxe_sr_glue_remote_warning_ratelimit(void)
{
	return __ratelimit(&rxe_sr_remote_warnings);
}

struct sk_buff *rxe_sr_glue_rx_dequeue(struct rxe_sr_rx *rx)
{
	return skb_dequeue(&rx->q);
}

/* Waits for the work and frees what is still queued; nothing may queue after. */
void rxe_sr_glue_rx_stop(struct rxe_sr_rx *rx)
{
	rxe_sr_work_disable(&rx->work);
	skb_queue_purge(&rx->q);
	if (rx->backlog) {
		rx->backlog = false;
		atomic_dec(&rxe_sr_backlogs);
	}
}

/* The datagram from its IP header to its end, made linear. */
int rxe_sr_glue_skb_ip_bytes(struct sk_buff *skb, void **data, size_t *len)
{
	if (skb_linearize(skb))
		return -ENOMEM;
	*data = skb_network_header(skb);
	*len = skb_tail_pointer(skb) - skb_network_header(skb);
	return 0;
}

/* ---- a QP's held-back request packets ---- */

struct sk_buff_head *rxe_sr_glue_skbq_new(void)
{
	struct sk_buff_head *q = kmalloc(sizeof(*q), GFP_KERNEL_ACCOUNT);

	if (q)
		skb_queue_head_init(q);
	return q;
}

int rxe_sr_glue_skbq_push(struct sk_buff_head *q, struct sk_buff *skb)
{
	unsigned long flags;
	int ret = 0;

	spin_lock_irqsave(&q->lock, flags);
	if (skb_queue_len(q) >= RXE_SR_HELD_MAX)
		ret = -ENOBUFS;
	else
		__skb_queue_tail(q, skb);
	spin_unlock_irqrestore(&q->lock, flags);
	return ret;
}

struct sk_buff *rxe_sr_glue_skbq_pop(struct sk_buff_head *q)
{
	return skb_dequeue(q);
}

u32 rxe_sr_glue_skbq_len(struct sk_buff_head *q)
{
	return skb_queue_len_lockless(q);
}

void rxe_sr_glue_skbq_purge(struct sk_buff_head *q)
{
	skb_queue_purge(q);
}

void rxe_sr_glue_skbq_free(struct sk_buff_head *q)
{
	skb_queue_purge(q);
	kfree(q);
}

/* Pages an MR's umem pins (PAGE_SIZE blocks) and the offset of its first byte in the first. */
size_t rxe_sr_glue_umem_npages(struct ib_umem *umem)
{
	return ib_umem_num_pages(umem);
}

size_t rxe_sr_glue_umem_first_offset(struct ib_umem *umem)
{
	return ib_umem_offset(umem);
}

/* Fills @pages with the umem's pinned pages, in order (at most @n). Returns how many. */
size_t rxe_sr_glue_umem_pages(struct ib_umem *umem, void **pages, size_t n)
{
	struct sg_page_iter it;
	size_t i = 0;

	for_each_sgtable_page(&umem->sgt_append.sgt, &it, 0) {
		if (i == n)
			break;
		pages[i++] = sg_page_iter_page(&it);
	}
	return i;
}

/* Copies @n bytes between @buf and byte @in of @page (into the page when @to_page). */
static void rxe_sr_page_copy(struct page *page, size_t in, void *buf, size_t n, bool to_page)
{
	void *va = kmap_local_page(page);

	if (to_page)
		memcpy(va + in, buf, n);
	else
		memcpy(buf, va + in, n);
	kunmap_local(va);
}

/*
 * Copies @len bytes between @buf and byte @offset of the memory behind a page array of
 * @npages pages (into the pages when @to_pages). Direct indexing: no scatterlist walk.
 */
int rxe_sr_glue_pages_copy(void *const *pages, size_t npages, size_t offset, void *buf,
			   size_t len, bool to_pages)
{
	if (offset + len < offset || offset + len > npages * PAGE_SIZE)
		return -EFAULT;
	while (len) {
		size_t in = offset & ~PAGE_MASK;
		size_t n = min_t(size_t, len, PAGE_SIZE - in);

		rxe_sr_page_copy(pages[offset >> PAGE_SHIFT], in, buf, n, to_pages);
		buf += n;
		offset += n;
		len -= n;
	}
	return 0;
}

/* ---- On-demand paging (ib_umem_odp): no page is pinned; the MMU notifier unmaps ---- */

/*
 * The process is about to change or drop pages of an ODP MR's range: under the umem's
 * mutex (which every copy through the MR holds), the pages' mappings in dma_list go, so
 * the next access faults them in again. The new sequence number makes a fault racing with
 * this retry.
 */
static bool rxe_sr_odp_invalidate(struct mmu_interval_notifier *mni,
				  const struct mmu_notifier_range *range, unsigned long cur_seq)
{
	struct ib_umem_odp *odp = container_of(mni, struct ib_umem_odp, notifier);
	u64 start, end;

	if (!mmu_notifier_range_blockable(range))
		return false;
	mutex_lock(&odp->umem_mutex);
	mmu_interval_set_seq(mni, cur_seq);
	start = max_t(u64, ib_umem_start(odp), range->start);
	end = min_t(u64, ib_umem_end(odp), range->end);
	if (start < end)
		ib_umem_odp_unmap_dma_pages(odp, start, end);
	mutex_unlock(&odp->umem_mutex);
	return true;
}

static const struct mmu_interval_notifier_ops rxe_sr_odp_ops = {
	.invalidate = rxe_sr_odp_invalidate,
};

/* The kernel was built with on-demand paging (the core's ib_umem_odp). */
bool rxe_sr_glue_odp_supported(void)
{
	return IS_ENABLED(CONFIG_INFINIBAND_ON_DEMAND_PAGING);
}

/* Registers @len bytes at @addr of the calling process for on-demand paging. */
struct ib_umem_odp *rxe_sr_glue_odp_get(struct ib_device *dev, unsigned long addr, size_t len,
					int access)
{
	if (!IS_ENABLED(CONFIG_INFINIBAND_ON_DEMAND_PAGING))
		return ERR_PTR(-EOPNOTSUPP);
	return ib_umem_odp_get(dev, addr, len, access, &rxe_sr_odp_ops);
}

void rxe_sr_glue_odp_release(struct ib_umem_odp *odp)
{
	ib_umem_odp_release(odp);
}

unsigned long rxe_sr_glue_odp_address(struct ib_umem_odp *odp)
{
	return odp->umem.address;
}

size_t rxe_sr_glue_odp_length(struct ib_umem_odp *odp)
{
	return odp->umem.length;
}

bool rxe_sr_glue_odp_writable(struct ib_umem_odp *odp)
{
	return odp->umem.writable;
}

/* Every page of [@addr, @addr + @len) mapped with read (and write if @write) rights. */
static bool rxe_sr_odp_mapped(struct ib_umem_odp *odp, u64 addr, u64 len, bool write)
{
	u64 perm = ODP_READ_ALLOWED_BIT | (write ? ODP_WRITE_ALLOWED_BIT : 0);
	size_t i = (addr - ib_umem_start(odp)) >> odp->page_shift;
	size_t last = (addr + len - 1 - ib_umem_start(odp)) >> odp->page_shift;

	lockdep_assert_held(&odp->umem_mutex);
	for (; i <= last; i++)
		if ((odp->dma_list[i] & perm) != perm)
			return false;
	return true;
}

/*
 * Maps bytes [@off, @off + @len) of the MR's range (offsets from its first byte) for reading,
 * or writing when @write: pages already mapped are used as they are; the others are faulted
 * in (@fault) or, without @fault, mapped only if the process has them (a prefetch that must
 * not fault). Returns 0 with the umem's mutex held (every page mapped, unless !@fault), or
 * a negative errno with it released.
 */
int rxe_sr_glue_odp_map_lock(struct ib_umem_odp *odp, u64 off, u64 len, bool write, bool fault)
{
	u64 addr = odp->umem.address + off;
	u64 perm = ODP_READ_ALLOWED_BIT | (write ? ODP_WRITE_ALLOWED_BIT : 0);
	int np;

	if (!len || off > odp->umem.length || len > odp->umem.length - off)
		return -EFAULT;
	if (write && !odp->umem.writable)
		return -EACCES;
	mutex_lock(&odp->umem_mutex);
	if (rxe_sr_odp_mapped(odp, addr, len, write))
		return 0;
	mutex_unlock(&odp->umem_mutex);
	np = ib_umem_odp_map_dma_and_lock(odp, addr, len, perm, fault);
	if (np < 0)
		return np;
	if (fault && !rxe_sr_odp_mapped(odp, addr, len, write)) {
		mutex_unlock(&odp->umem_mutex);
		return -EFAULT;
	}
	return 0;
}

void rxe_sr_glue_odp_lock(struct ib_umem_odp *odp)
{
	mutex_lock(&odp->umem_mutex);
}

void rxe_sr_glue_odp_unlock(struct ib_umem_odp *odp)
{
	mutex_unlock(&odp->umem_mutex);
}

/*
 * Copies @len bytes between @buf and byte @off of the MR's range (into the memory when
 * @to_pages). The caller holds the umem's mutex from rxe_sr_glue_odp_map_lock() over a range
 * that covers these bytes, so their pages stay mapped (an invalidation waits for the mutex).
 */
int rxe_sr_glue_odp_copy(struct ib_umem_odp *odp, u64 off, void *buf, size_t len, bool to_pages)
{
	u64 addr = odp->umem.address + off;
	size_t i = (addr - ib_umem_start(odp)) >> PAGE_SHIFT;
	size_t in = addr & ~PAGE_MASK;

	lockdep_assert_held(&odp->umem_mutex);
	if (off > odp->umem.length || len > odp->umem.length - off)
		return -EFAULT;
	while (len) {
		size_t n = min_t(size_t, len, PAGE_SIZE - in);

		rxe_sr_page_copy(hmm_pfn_to_page(odp->pfn_list[i]), in, buf, n, to_pages);
		buf += n;
		len -= n;
		in = 0;
		i++;
	}
	return 0;
}

/* Sleeps until *@v is zero (a teardown waiting for its users to drain). */
void rxe_sr_glue_wait_var_zero(u32 *v)
{
	wait_var_event(v, READ_ONCE(*v) == 0);
}

/* Wakes whoever waits on @v; uses the address as a key only (never reads *@v). */
void rxe_sr_glue_wake_up_var(u32 *v)
{
	/* Orders the caller's atomic update before the waiter's condition check. */
	smp_mb();
	wake_up_var(v);
}

int rxe_sr_glue_xa_store(struct xarray *xa, unsigned long index, void *entry)
{
	return xa_err(xa_store(xa, index, entry, GFP_KERNEL));
}

/* ---- QP timers ---- */

struct rxe_sr_qp_timer {
	struct timer_list timer;
	struct rxe_sr_work work;
	void (*fn)(void *owner);
	void *owner;
};

static bool rxe_sr_qp_timer_run(void *owner)
{
	struct rxe_sr_qp_timer *t = owner;

	t->fn(t->owner);
	return false;
}

static void rxe_sr_qp_timer_fn(struct timer_list *timer)
{
	struct rxe_sr_qp_timer *t = from_timer(t, timer, timer);

	rxe_sr_work_queue(&t->work);
}

struct rxe_sr_qp_timer *rxe_sr_glue_qp_timer_new(void (*fn)(void *owner), void *owner)
{
	struct rxe_sr_qp_timer *t = kzalloc(sizeof(*t), GFP_KERNEL);

	if (!t)
		return NULL;
	t->fn = fn;
	t->owner = owner;
	timer_setup(&t->timer, rxe_sr_qp_timer_fn, 0);
	rxe_sr_work_init(&t->work, system_wq, rxe_sr_qp_timer_run, t);
	return t;
}

u64 rxe_sr_glue_now_us(void)
{
	return div_u64(ktime_get_ns(), NSEC_PER_USEC);
}

/* (Re)arms the timer for @deadline_us (rxe_sr_glue_now_us time); at least one jiffy ahead. */
void rxe_sr_glue_qp_timer_arm(struct rxe_sr_qp_timer *t, u64 deadline_us)
{
	u64 now = rxe_sr_glue_now_us();
	u64 delta = deadline_us > now ? deadline_us - now : 0;
	unsigned long j = usecs_to_jiffies(min_t(u64, delta, 60ULL * USEC_PER_SEC));

	mod_timer(&t->timer, jiffies + max(j, 1UL));
}

void rxe_sr_glue_qp_timer_kick(struct rxe_sr_qp_timer *t)
{
	rxe_sr_work_queue(&t->work);
}

void rxe_sr_glue_qp_timer_shutdown(struct rxe_sr_qp_timer *t)
{
	timer_shutdown_sync(&t->timer);
	/* Waits for a running work item, even one that queues itself again. */
	rxe_sr_work_disable(&t->work);
}

/* Stops the timer for good (arming it afterwards does nothing), waits for the work, frees. */
void rxe_sr_glue_qp_timer_free(struct rxe_sr_qp_timer *t)
{
	if (!t)
		return;
	rxe_sr_glue_qp_timer_shutdown(t);
	kfree(t);
}

void rxe_sr_glue_copy_shared(void *dst, const void *src, size_t n)
{
	memcpy(dst, src, n);
}

/* ---- spinlocks taken with interrupts off ---- */

unsigned long rxe_sr_glue_spin_lock_irqsave(spinlock_t *lock)
{
	unsigned long flags;

	spin_lock_irqsave(lock, flags);
	return flags;
}

void rxe_sr_glue_spin_unlock_irqrestore(spinlock_t *lock, unsigned long flags)
{
	spin_unlock_irqrestore(lock, flags);
}

/* ---- the GID table ---- */

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

/* ---- kernel consumers' memory ---- */

int rxe_sr_glue_kva_copy(u64 addr, void *buf, size_t len, bool to_kva)
{
	if (addr + len < addr)
		return -EFAULT;
	while (len) {
		void *va = (void *)(uintptr_t)addr;
		size_t n = min_t(size_t, len, PAGE_SIZE - offset_in_page(va));

		if (!virt_addr_valid(va))
			return -EFAULT;
		if (to_kva)
			memcpy(va, buf, n);
		else
			memcpy(buf, va, n);
		buf += n;
		addr += n;
		len -= n;
	}
	return 0;
}

/* ---- multicast MAC filter (as rdma_rxe's rxe_mcast_add/del) ---- */

int rxe_sr_glue_mcast_mac(struct net_device *ndev, const u8 *mgid, bool add)
{
	const struct in6_addr *a6 = (const struct in6_addr *)mgid;
	unsigned char ll_addr[ETH_ALEN];

	if (ipv6_addr_v4mapped(a6))
		ip_eth_mc_map(a6->s6_addr32[3], ll_addr);
	else
		ipv6_eth_mc_map(a6, ll_addr);
	return add ? dev_mc_add(ndev, ll_addr) : dev_mc_del(ndev, ll_addr);
}

/* ---- the ICRC's CRC-32 ----
 *
 * As rdma_rxe: the crypto API's "crc32" (the CRC-32 of crc32_le, state not inverted between
 * updates), so that an architecture's implementation (crc32-pclmul on x86) is used where the
 * kernel has one; 6.12's crc32_le is lib/crc32.c's generic one. Allocated at load before any
 * device exists, freed at unload after the last is gone; without it, crc32_le.
 */
static struct crypto_shash *rxe_sr_crc32_tfm;

/*
 * A "crc32" descriptor's state is one u32. The descriptor lives on the stack of every call
 * (several per packet), sized for that state: SHASH_DESC_ON_STACK's HASH_MAX_DESCSIZE bytes
 * would be zeroed at each call by the kernel's automatic stack initialisation, which cost
 * more than the CRC itself. A transform wanting more is not used.
 */
#define RXE_SR_CRC32_DESC_MAX 16

union rxe_sr_crc32_desc {
	struct shash_desc desc;
	char bytes[sizeof(struct shash_desc) + RXE_SR_CRC32_DESC_MAX];
};

void rxe_sr_glue_crc32_init(void)
{
	struct crypto_shash *tfm = crypto_alloc_shash("crc32", 0, 0);

	if (!IS_ERR(tfm) && crypto_shash_descsize(tfm) > RXE_SR_CRC32_DESC_MAX) {
		crypto_free_shash(tfm);
		tfm = ERR_PTR(-EINVAL);
	}
	rxe_sr_crc32_tfm = IS_ERR(tfm) ? NULL : tfm;
}

void rxe_sr_glue_crc32_exit(void)
{
	if (rxe_sr_crc32_tfm)
		crypto_free_shash(rxe_sr_crc32_tfm);
	rxe_sr_crc32_tfm = NULL;
}

u32 rxe_sr_glue_crc32(u32 crc, const void *data, size_t len)
{
	struct crypto_shash *tfm = rxe_sr_crc32_tfm;
	union rxe_sr_crc32_desc d;
	u32 *state;

	if (!tfm)
		return crc32_le(crc, data, len);
	d.desc.tfm = tfm;
	state = shash_desc_ctx(&d.desc);
	*state = crc;
	if (crypto_shash_update(&d.desc, data, len))
		return crc32_le(crc, data, len);
	return *state;
}

const char *rxe_sr_glue_crc32_driver(void)
{
	return rxe_sr_crc32_tfm ? crypto_shash_driver_name(rxe_sr_crc32_tfm) : "crc32_le";
}
