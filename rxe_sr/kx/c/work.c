// SPDX-License-Identifier: GPL-2.0
/*
 * rxe_sr: the driver's work: the priority it runs at, one run at a time per work item, the
 * device's receive queue and the QP timers built on it. C because the bit locks and barriers
 * (test_and_set_bit_lock, smp_mb__after_atomic), disable_work() and INIT_WORK's lockdep class
 * per call site have no Rust API in 6.12.
 */
#include <linux/workqueue.h>
#include <linux/skbuff.h>
#include <linux/atomic.h>
#include <linux/bitops.h>
#include <linux/timer.h>
#include <linux/jiffies.h>
#include <linux/ktime.h>
#include <linux/slab.h>

#include "rxe_sr_glue.h"

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
	 * every QP's work in system_wq's queue: the acknowledgments it carries are what lets
	 * those QPs send again.
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

void rxe_sr_glue_qp_timer_init(struct rxe_sr_qp_timer *t, void (*fn)(void *owner), void *owner)
{
	t->fn = fn;
	t->owner = owner;
	timer_setup(&t->timer, rxe_sr_qp_timer_fn, 0);
	rxe_sr_work_init(&t->work, system_wq, rxe_sr_qp_timer_run, t);
}

static u64 rxe_sr_now_us(void)
{
	return div_u64(ktime_get_ns(), NSEC_PER_USEC);
}

/*
 * (Re)arms the timer for @deadline_us, on the monotonic clock in microseconds that
 * kx/timer.rs's now_us reads too; at least one jiffy ahead.
 */
void rxe_sr_glue_qp_timer_arm(struct rxe_sr_qp_timer *t, u64 deadline_us)
{
	u64 now = rxe_sr_now_us();
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
