// SPDX-License-Identifier: GPL-2.0
/*
 * rxe_sr: calls Rust cannot make directly into include/linux/skbuff.h (and a QP's held-back
 * packets, a bounded sk_buff_head): static inlines and macros, one exported function each. No
 * logic of the driver's.
 */
#include <linux/skbuff.h>
#include <linux/slab.h>

#include "rxe_sr_glue.h"

void rxe_sr_glue_skb_drop(struct sk_buff *skb)
{
	kfree_skb(skb);
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

void rxe_sr_glue_skbq_free(struct sk_buff_head *q)
{
	skb_queue_purge(q);
	kfree(q);
}
