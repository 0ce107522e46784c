/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rxe_sr: the C side of the kernel abstraction layer (rxe_sr/kx/).
 *
 * Two directions:
 *  - rxe_sr_glue_*: C for what Rust cannot reach directly: static inline functions and
 *    macros (rxe_sr/kx/helpers/, one file per kernel header), and the subsystems that stay
 *    in C for a reason each file states (rxe_sr/kx/c/: the parameters, the GID rescan work,
 *    the netdev index, RoCEv2 datagrams, the work, ODP, the ICRC).
 *  - rxe_sr_rs_*: the two entry points implemented in Rust (rxe_sr/kx/rxe/moduleparam.rs) that
 *    the module parameter's ops call. The link type, the netdev notifier, the UDP tunnel,
 *    the QP timers and the receive queue take their Rust handler as a function pointer
 *    instead (kx/ builds it from a trait).
 */
#ifndef RXE_SR_GLUE_H
#define RXE_SR_GLUE_H

#include <linux/types.h>
#include <linux/skbuff.h>
#include <linux/timer.h>
#include <linux/workqueue.h>

struct net;
struct net_device;
struct socket;
struct sock;
struct sk_buff;
struct ib_udata;
struct ib_ucontext;
struct ib_cq;
struct ib_device;
struct ib_srq;
struct uverbs_attr_bundle;
struct rdma_user_mmap_entry;
struct xarray;
struct ib_umem;
struct ib_umem_odp;

/*
 * A work item of the driver's (receive, QP timers), queued at high or at normal priority
 * as kx/c/work.c's rxe_sr_work_queue() decides at that moment. It has a work_struct for each,
 * so that cancelling both waits for every run; bits in @flags keep two runs from
 * overlapping (see rxe_sr_work_run).
 */
struct rxe_sr_work {
	struct work_struct hi;
	struct work_struct lo;
	/* Where lo goes: system_wq, or system_unbound_wq for the receive work. */
	struct workqueue_struct *lo_wq;
	unsigned long flags;
	/*
	 * Runs in process context with @owner; true when it wants to run again at once (it
	 * stopped at a budget with work left).
	 */
	bool (*fn)(void *owner);
	void *owner;
};

/*
 * A device's receive queue: skbs from the UDP socket (softirq), taken by its work at most
 * RXE_SR_RX_BUDGET a run (NAPI's weight).
 */
struct rxe_sr_rx {
	struct sk_buff_head q;
	struct rxe_sr_work work;
	/*
	 * The last run stopped at its budget with datagrams left, and none since has emptied
	 * the queue: the driver's work runs at normal priority (see rxe_sr_work_queue).
	 */
	bool backlog;
	/*
	 * What the work calls to take at most RXE_SR_RX_BUDGET datagrams; true when it took
	 * that many.
	 */
	bool (*fn)(void *owner);
	void *owner;
};
/* Datagrams a run of the receive work takes before it queues itself again. */
#define RXE_SR_RX_BUDGET 64

/* --- implemented in C (kx/c/, kx/helpers/) --- */
/* The module parameters' values (kx/c/params.c), written only while the module loads. */
struct rxe_sr_params {
	int recovery; /* index into proto::recovery::scheme::Scheme::ALL; 0 is gbn */
	unsigned int sr_pool_units;
	unsigned int sr_pool_blocks;
	unsigned int melo_pool_blocks;
	unsigned int sr_pipe_psns;
	unsigned int sr_window_psns;
	unsigned int gbn_window_psns;
	unsigned int dev_inflight_psns;
	unsigned int max_objects;
	unsigned int fec_unit;
	unsigned int fec_depth;
	bool timer_hold;
};
extern struct rxe_sr_params rxe_sr_params;
/* The tx_zero_copy parameter, writable at any time (read once per packet). */
extern bool rxe_sr_tx_zero_copy;
/* The accessors of the device attributes `recovery` and `fec` (kx/rxe/soft_roce.rs). */
struct rxe_sr_dev_accessors {
	int (*scheme_get)(struct ib_device *ibdev);
	void (*scheme_set)(struct ib_device *ibdev, int index);
	int (*fec_get)(struct ib_device *ibdev);
	int (*fec_set)(struct ib_device *ibdev, const char *buf);
};
const struct attribute_group *rxe_sr_glue_device_group(const struct rxe_sr_dev_accessors *acc);
void rxe_sr_glue_gid_work_init(void (*fn)(void));
void rxe_sr_glue_gid_work_schedule(void);
void rxe_sr_glue_gid_work_cancel_sync(void);
void rxe_sr_glue_resync_gids(struct ib_device *ib, bool del);
/* process_mad's results (ib_verbs.h's are an anonymous enum, which bindgen cannot name). */
enum rxe_sr_mad_result {
	RXE_SR_MAD_RESULT_SUCCESS = 1 << 0,
	RXE_SR_MAD_RESULT_REPLY = 1 << 1,
};
void rxe_sr_glue_ib_device_home_net(struct ib_device *ibdev, struct net_device *ndev);
bool rxe_sr_glue_ib_device_try_get(struct ib_device *dev);
void rxe_sr_glue_global_lock(void);
void rxe_sr_glue_global_unlock(void);
struct socket *rxe_sr_glue_udp_tunnel_open(struct net *net, bool ipv6, u16 port,
					   int (*encap_rcv)(struct sock *sk, struct sk_buff *skb));
bool rxe_sr_glue_udp_port_owner(struct net *net, bool ipv6, u16 port, char *buf, size_t len);
void rxe_sr_glue_udp_tunnel_close(struct socket *sock);
void rxe_sr_glue_skb_drop(struct sk_buff *skb);
struct ib_device *rxe_sr_glue_ib_device_below(struct net_device *ndev);
int rxe_sr_glue_ndev_bind(struct ib_device *ibdev, struct net_device *ndev);
void rxe_sr_glue_ndev_unbind(struct ib_device *ibdev);
struct net_device *rxe_sr_glue_get_netdev(struct ib_device *ibdev, u32 port);
struct ib_device *rxe_sr_glue_ib_device_by_netdev(struct net_device *ndev);
struct sk_buff *rxe_sr_glue_build_v4(struct net_device *ndev, __be32 saddr, __be32 daddr,
				     u16 sport, u8 tos, u8 ttl, const void *ib, size_t len,
				     size_t linear, bool local);
struct sk_buff *rxe_sr_glue_build_v6(struct net_device *ndev, const void *saddr,
				     const void *daddr, u16 sport, u8 tclass, u8 hop_limit,
				     u32 flow_label, const void *ib, size_t len, size_t linear,
				     bool local);
void *rxe_sr_glue_skb_add_chunk(struct sk_buff *skb, size_t len, bool last);
int rxe_sr_glue_skb_add_mem(struct sk_buff *skb, void *const *pages, size_t npages,
			    size_t offset, size_t len, u32 *crc);
int rxe_sr_glue_xmit(struct sk_buff *skb);
void rxe_sr_glue_xa_lock(struct xarray *xa);
int rxe_sr_glue_xa_store(struct xarray *xa, unsigned long index, void *entry);
void rxe_sr_glue_rx_init(struct rxe_sr_rx *rx, bool (*fn)(void *owner), void *owner);
/* Received datagrams waiting for the receive work, at most this many (a flood beyond it is
 * dropped and counted, as a NIC's full ring would). */
#define RXE_SR_RX_QUEUE_MAX 4096
/* Queues @skb for the receive work: 0, or -ENOBUFS when the queue is full (@skb freed). */
int rxe_sr_glue_rx_queue(struct rxe_sr_rx *rx, struct sk_buff *skb);
/* Lets the scheduler run others; process context only (long loops: receive, transmit). */
void rxe_sr_glue_cond_resched(void);
/*
 * Whether a warning a remote peer can cause (a refused request, retries exhausted) may be
 * printed now: the kernel's default limit (DEFAULT_RATELIMIT_BURST per
 * DEFAULT_RATELIMIT_INTERVAL) over all of them; the kernel logs how many it held back.
 */
bool rxe_sr_glue_remote_warning_ratelimit(void);
struct sk_buff *rxe_sr_glue_rx_dequeue(struct rxe_sr_rx *rx);
void rxe_sr_glue_rx_stop(struct rxe_sr_rx *rx);
int rxe_sr_glue_skb_ip_bytes(struct sk_buff *skb, void **data, size_t *len);
/* A QP's held-back request packets (while its READ responses go out), at most
 * RXE_SR_HELD_MAX; an skb queue with its own lock. */
#define RXE_SR_HELD_MAX 256
struct sk_buff_head *rxe_sr_glue_skbq_new(void);
/* Appends @skb: 0, or -ENOBUFS when full (@skb stays the caller's). */
int rxe_sr_glue_skbq_push(struct sk_buff_head *q, struct sk_buff *skb);
struct sk_buff *rxe_sr_glue_skbq_pop(struct sk_buff_head *q);
/* Purges and frees the queue. */
void rxe_sr_glue_skbq_free(struct sk_buff_head *q);
void rxe_sr_glue_wait_var_zero(u32 *v);
void rxe_sr_glue_wake_up_var(u32 *v);
/* memcpy for memory user space maps and may change concurrently (shared rings): the copy is
 * made under the kernel's memory model, not Rust's. */
void rxe_sr_glue_copy_shared(void *dst, const void *src, size_t n);
size_t rxe_sr_glue_umem_pages(struct ib_umem *umem, void **pages, size_t n);
int rxe_sr_glue_pages_copy(void *const *pages, size_t npages, size_t offset, void *buf,
			   size_t len, bool to_pages);
bool rxe_sr_glue_odp_supported(void);
struct ib_umem_odp *rxe_sr_glue_odp_get(struct ib_device *dev, unsigned long addr, size_t len,
					int access);
void rxe_sr_glue_odp_release(struct ib_umem_odp *odp);
int rxe_sr_glue_odp_map_lock(struct ib_umem_odp *odp, u64 off, u64 len, bool write, bool fault);
void rxe_sr_glue_odp_lock(struct ib_umem_odp *odp);
void rxe_sr_glue_odp_unlock(struct ib_umem_odp *odp);
int rxe_sr_glue_odp_copy(struct ib_umem_odp *odp, u64 off, void *buf, size_t len, bool to_pages);
void rxe_sr_glue_xa_unlock(struct xarray *xa);
void rxe_sr_glue_dev_hold(struct net_device *ndev);
void rxe_sr_glue_dev_put(struct net_device *ndev);
struct ib_udata *rxe_sr_glue_attrs_udata(struct uverbs_attr_bundle *attrs);
struct ib_ucontext *rxe_sr_glue_udata_ucontext(struct ib_udata *udata);
void *rxe_sr_glue_vmalloc_user(size_t size);
void rxe_sr_glue_xa_init_alloc1(struct xarray *xa);

/*
 * A QP's timer (retransmission and RNR delays), embedded in the QP: the timer fires in
 * softirq context and queues a work item, which calls fn(owner) in process context.
 */
struct rxe_sr_qp_timer {
	struct timer_list timer;
	struct rxe_sr_work work;
	void (*fn)(void *owner);
	void *owner;
};
void rxe_sr_glue_qp_timer_init(struct rxe_sr_qp_timer *t, void (*fn)(void *owner), void *owner);
void rxe_sr_glue_qp_timer_arm(struct rxe_sr_qp_timer *t, u64 deadline_us);
/* Stops a QP timer for good and disables its work (waiting for a running one); arming or
 * kicking it afterwards does nothing. Its memory may then be freed. */
void rxe_sr_glue_qp_timer_shutdown(struct rxe_sr_qp_timer *t);

/* The ICRC's CRC-32 through the crypto API (kx/c/icrc.c) */
const char *rxe_sr_glue_crc32_init(void);
void rxe_sr_glue_crc32_exit(void);
u32 rxe_sr_glue_crc32(u32 crc, const void *data, size_t len);
/* Queues the timer's work now (a kernel consumer posted work requests). */
void rxe_sr_glue_qp_timer_kick(struct rxe_sr_qp_timer *t);

/* Spinlocks that kernel verbs callers may reach with interrupts off (kx/spinlock.rs). */
unsigned long rxe_sr_glue_spin_lock_irqsave(spinlock_t *lock);
void rxe_sr_glue_spin_unlock_irqrestore(spinlock_t *lock, unsigned long flags);

/*
 * Copies @len bytes between @buf and kernel virtual address @addr (into @addr when @to_kva):
 * a kernel consumer's buffer behind its PD's DMA MR (virtual DMA: the "DMA address" is the
 * kernel address). Addresses outside the kernel's direct map are refused with -EFAULT.
 */
int rxe_sr_glue_kva_copy(u64 addr, void *buf, size_t len, bool to_kva);

/* The RoCEv2 GID at @index of port 1 into @gid (16 bytes): 0, or -EINVAL for another GID
 * type, or the GID table's error (an empty or out-of-range entry). Any context. */
int rxe_sr_glue_roce_v2_gid(struct ib_device *ibdev, u32 index, u8 *gid);

/* Adds (@add) or removes the Ethernet multicast address of RoCE multicast GID @mgid. */
int rxe_sr_glue_mcast_mac(struct net_device *ndev, const u8 *mgid, bool add);
int rxe_sr_glue_xa_alloc_cyclic(struct xarray *xa, u32 *id, void *entry, u32 min, u32 max,
				u32 *next);
void *rxe_sr_glue_xa_first(struct xarray *xa, unsigned long *index);

/* --- implemented in Rust --- */
int rxe_sr_rs_recovery_parse(const char *val);
const char *rxe_sr_rs_recovery_name(int index);

#endif /* RXE_SR_GLUE_H */
