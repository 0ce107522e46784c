// SPDX-License-Identifier: GPL-2.0
/*
 * rxe_sr_ulp_test: what a kernel ULP (nvme-rdma, iser, rds, smc) relies on, checked through
 * the in-kernel verbs on the device named by `dev` (default sr0). Loading the module runs
 * the checks, prints one "rxe_sr_ulp_test: <check>: PASS|FAIL ..." line each and fails the
 * load (-EIO) if any failed. Test code only: the selftests load it in the guests.
 *
 *  flush:   an RC QP with 8 SENDs outstanding and 4 receives posted enters Error (the peer
 *           has no receive, RNR retry 0): every one of the 12 work requests completes, in
 *           order, the first SEND with RNR_RETRY_EXC_ERR, the rest with WR_FLUSH_ERR.
 *  handler: the completion handler of a QP's CQ moves that QP to Error with ib_modify_qp
 *           (a ULP tearing down from its handler): it must neither deadlock nor be refused.
 *  query:   ib_query_qp of a connected QP returns its address vector (destination GID,
 *           source GID index) with grh.sgid_attr NULL: the core lends that pointer only for
 *           the modify_qp call, so a driver that hands it back gives the caller a reference
 *           it does not hold.
 *  fastreg: ib_alloc_mr of max_fast_reg_page_list_len pages succeeds, of one page more
 *           fails; ib_map_mr_sg maps with 4 KiB pages and is refused (-EINVAL) with a page
 *           size page_size_cap does not offer (2 KiB, 12 KiB).
 *  ah:      kernel AHs count against max_ah: max_ah of them are created, the next is
 *           refused, and once one is destroyed another is created.
 *  mcast:   max_mcast_qp_attach UD QPs attach to one multicast group, the next is refused.
 * Each limit is read from the device's attributes (what ibv_devinfo -v reports).
 *
 * Two RC QPs on the one device talk over its loopback path (the GID of the netdev's IPv4
 * address).
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/sched.h>
#include <linux/scatterlist.h>
#include <linux/sizes.h>
#include <linux/completion.h>
#include <linux/delay.h>
#include <net/ipv6.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_cache.h>

static char *dev = "sr0";
module_param(dev, charp, 0444);
MODULE_PARM_DESC(dev, "RDMA device to test (default sr0)");
/*
 * The parameter's setter allocates `leak` objects and forgets them: kmemleak must report
 * them as unreferenced. It runs in .text: a frame in .init.text has no name once init is
 * over, and the leak report must name this module.
 */
static unsigned int leak;

/*
 * Overwrites the stack below the caller's frame, where kmalloc's frames left copies of the
 * pointers it returned: kmemleak scans stacks, and a stale copy kept a leaked object
 * referenced.
 */
static noinline void scrub_stack(unsigned int depth)
{
	char buf[512];

	memzero_explicit(buf, sizeof(buf));
	if (depth > 1)
		scrub_stack(depth - 1);
	/* Not a tail call: each level keeps its frame while the next one writes. */
	barrier_data(buf);
}

static int leak_set(const char *val, const struct kernel_param *kp)
{
	unsigned int i;
	int ret = param_set_uint(val, kp);

	if (ret)
		return ret;
	for (i = 0; i < leak; i++) {
		char *p = kmalloc(256, GFP_KERNEL);

		if (p)
			memset(p, i, 256);
	}
	scrub_stack(4);
	return 0;
}

static const struct kernel_param_ops leak_ops = {
	.set = leak_set,
	.get = param_get_uint,
};
module_param_cb(leak, &leak_ops, &leak, 0444);
MODULE_PARM_DESC(leak, "Instead of the checks, leak this many 256-byte objects and stay loaded "
		 "(proves that the selftests' kmemleak check can fail)");

struct side {
	struct ib_cq *cq;
	struct ib_qp *qp;
};

struct ctx {
	struct ib_device *ib;
	struct ib_pd *pd;
	int gid_index;
	union ib_gid gid;
	void *buf;
	struct completion handler_done;
	struct ib_qp *handler_qp;
	int handler_ret;
	atomic_t handler_calls;
	struct ib_wc wc[16];
};

static int find_gid(struct ctx *c)
{
	int i;

	for (i = 0; i < 16; i++) {
		const struct ib_gid_attr *a = rdma_get_gid_attr(c->ib, 1, i);

		if (IS_ERR(a))
			continue;
		if (a->gid_type == IB_GID_TYPE_ROCE_UDP_ENCAP &&
		    ipv6_addr_v4mapped((struct in6_addr *)a->gid.raw)) {
			c->gid_index = i;
			c->gid = a->gid;
			rdma_put_gid_attr(a);
			return 0;
		}
		rdma_put_gid_attr(a);
	}
	return -ENODEV;
}

static void handler(struct ib_cq *cq, void *arg)
{
	struct ctx *c = arg;
	struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };

	if (atomic_inc_return(&c->handler_calls) != 1)
		return;
	/* A ULP tearing its QP down from its completion handler. */
	c->handler_ret = ib_modify_qp(c->handler_qp, &attr, IB_QP_STATE);
	complete(&c->handler_done);
}

static int make_side(struct ctx *c, struct side *s, ib_comp_handler h)
{
	struct ib_cq_init_attr ca = { .cqe = 64 };
	struct ib_qp_init_attr qa = {};

	s->cq = ib_create_cq(c->ib, h, NULL, c, &ca);
	if (IS_ERR(s->cq))
		return PTR_ERR(s->cq);
	qa.send_cq = s->cq;
	qa.recv_cq = s->cq;
	qa.qp_type = IB_QPT_RC;
	qa.sq_sig_type = IB_SIGNAL_ALL_WR;
	qa.cap.max_send_wr = 16;
	qa.cap.max_recv_wr = 16;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	s->qp = ib_create_qp(c->pd, &qa);
	if (IS_ERR(s->qp)) {
		int ret = PTR_ERR(s->qp);

		s->qp = NULL;
		ib_destroy_cq(s->cq);
		s->cq = NULL;
		return ret;
	}
	return 0;
}

static void drop_side(struct side *s)
{
	if (s->qp)
		ib_destroy_qp(s->qp);
	if (s->cq)
		ib_destroy_cq(s->cq);
}

/* RESET -> INIT -> RTR -> RTS towards @peer_qpn on the device's own address. */
static int connect_qp(struct ctx *c, struct ib_qp *qp, u32 peer_qpn, u32 rq_psn, u32 sq_psn, u8 rnr_retry)
{
	struct ib_qp_attr a = {};
	int ret;

	a.qp_state = IB_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	a.qp_access_flags = IB_ACCESS_LOCAL_WRITE;
	ret = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_ACCESS_FLAGS);
	if (ret)
		return ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTR;
	a.path_mtu = IB_MTU_1024;
	a.dest_qp_num = peer_qpn;
	a.rq_psn = rq_psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr.type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_port_num(&a.ah_attr, 1);
	rdma_ah_set_grh(&a.ah_attr, &c->gid, 0, c->gid_index, 64, 0);
	ret = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU | IB_QP_DEST_QPN |
			   IB_QP_RQ_PSN | IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);
	if (ret)
		return ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = rnr_retry;
	a.sq_psn = sq_psn;
	a.max_rd_atomic = 1;
	return ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_TIMEOUT | IB_QP_RETRY_CNT | IB_QP_RNR_RETRY |
			    IB_QP_SQ_PSN | IB_QP_MAX_QP_RD_ATOMIC);
}

static int post_send(struct ctx *c, struct ib_qp *qp, u64 wr_id)
{
	struct ib_sge sge = { .addr = (uintptr_t)c->buf, .length = 64, .lkey = c->pd->local_dma_lkey };
	struct ib_send_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
				 .opcode = IB_WR_SEND, .send_flags = IB_SEND_SIGNALED };

	return ib_post_send(qp, &wr, NULL);
}

static int post_recv(struct ctx *c, struct ib_qp *qp, u64 wr_id)
{
	struct ib_sge sge = { .addr = (uintptr_t)c->buf + 2048, .length = 1024, .lkey = c->pd->local_dma_lkey };
	struct ib_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 };

	return ib_post_recv(qp, &wr, NULL);
}

static bool check_flush(struct ctx *c)
{
	struct side a = {}, b = {};
	struct ib_wc *wc = c->wc;
	u64 want_send = 1, want_recv = 101;
	int got = 0, i, n, ret;
	bool ok = true;
	unsigned long end;

	ret = make_side(c, &a, NULL);
	if (!ret)
		ret = make_side(c, &b, NULL);
	if (!ret)
		ret = connect_qp(c, a.qp, b.qp->qp_num, 0x200, 0x100, 0);
	if (!ret)
		ret = connect_qp(c, b.qp, a.qp->qp_num, 0x100, 0x200, 0);
	for (i = 0; !ret && i < 4; i++)
		ret = post_recv(c, a.qp, 101 + i);
	/* B has no receive: the first SEND meets an RNR NAK, and RNR retry 0 fails it. */
	for (i = 0; !ret && i < 8; i++)
		ret = post_send(c, a.qp, 1 + i);
	if (ret) {
		pr_err("rxe_sr_ulp_test: flush: FAIL set-up (%d)\n", ret);
		ok = false;
		goto out;
	}
	end = jiffies + 10 * HZ;
	while (got < 12 && time_before(jiffies, end)) {
		n = ib_poll_cq(a.cq, ARRAY_SIZE(c->wc), wc);
		if (n <= 0) {
			msleep(10);
			continue;
		}
		for (i = 0; i < n; i++, got++) {
			bool send = wc[i].wr_id < 100;
			u64 want = send ? want_send++ : want_recv++;
			enum ib_wc_status st = (send && want == 1) ? IB_WC_RNR_RETRY_EXC_ERR : IB_WC_WR_FLUSH_ERR;

			if (wc[i].wr_id != want || wc[i].status != st) {
				pr_err("rxe_sr_ulp_test: flush: FAIL completion %d: wr_id %llu status %d, want wr_id %llu status %d\n",
				       got, wc[i].wr_id, wc[i].status, want, st);
				ok = false;
			}
		}
	}
	if (got != 12) {
		pr_err("rxe_sr_ulp_test: flush: FAIL %d of 12 work requests completed (sends up to %llu, receives up to %llu)\n",
		       got, want_send - 1, want_recv - 1);
		ok = false;
	}
	if (ok)
		pr_info("rxe_sr_ulp_test: flush: PASS 12 work requests completed in order (1 RNR_RETRY_EXC_ERR, 11 WR_FLUSH_ERR)\n");
out:
	drop_side(&a);
	drop_side(&b);
	return ok;
}

static bool check_handler(struct ctx *c)
{
	struct side a = {}, b = {};
	struct ib_qp_attr qa;
	struct ib_qp_init_attr qi;
	bool ok = false;
	int ret;

	init_completion(&c->handler_done);
	atomic_set(&c->handler_calls, 0);
	ret = make_side(c, &a, handler);
	if (!ret)
		ret = make_side(c, &b, NULL);
	if (!ret)
		ret = connect_qp(c, a.qp, b.qp->qp_num, 0x300, 0x400, 7);
	if (!ret)
		ret = connect_qp(c, b.qp, a.qp->qp_num, 0x400, 0x300, 7);
	if (!ret)
		ret = post_recv(c, b.qp, 201);
	c->handler_qp = a.qp;
	if (!ret)
		ret = ib_req_notify_cq(a.cq, IB_CQ_NEXT_COMP);
	if (!ret)
		ret = post_send(c, a.qp, 7);
	if (ret) {
		pr_err("rxe_sr_ulp_test: handler: FAIL set-up (%d)\n", ret);
		goto out;
	}
	if (!wait_for_completion_timeout(&c->handler_done, 10 * HZ)) {
		/* Before the fix the handler blocks for ever on the QP's lock. */
		pr_err("rxe_sr_ulp_test: handler: FAIL the completion handler did not finish in 10 s (%d calls)\n",
		       atomic_read(&c->handler_calls));
		/* The QPs cannot be destroyed safely now: leak them (test code, failure path). */
		return false;
	}
	if (c->handler_ret) {
		pr_err("rxe_sr_ulp_test: handler: FAIL ib_modify_qp from the handler returned %d\n", c->handler_ret);
		goto out;
	}
	if (ib_query_qp(a.qp, &qa, IB_QP_STATE, &qi) || qa.qp_state != IB_QPS_ERR) {
		pr_err("rxe_sr_ulp_test: handler: FAIL the QP is not in Error after the handler\n");
		goto out;
	}
	ok = true;
	pr_info("rxe_sr_ulp_test: handler: PASS the completion handler moved its QP to Error\n");
out:
	drop_side(&a);
	drop_side(&b);
	return ok;
}

static bool check_query(struct ctx *c)
{
	struct side a = {}, b = {};
	struct ib_qp_attr qa = {};
	struct ib_qp_init_attr qi;
	const struct ib_global_route *grh;
	bool ok = false;
	int ret;

	ret = make_side(c, &a, NULL);
	if (!ret)
		ret = make_side(c, &b, NULL);
	if (!ret)
		ret = connect_qp(c, a.qp, b.qp->qp_num, 0x500, 0x600, 7);
	if (!ret)
		ret = ib_query_qp(a.qp, &qa, IB_QP_STATE | IB_QP_AV, &qi);
	if (ret) {
		pr_err("rxe_sr_ulp_test: query: FAIL set-up or ib_query_qp (%d)\n", ret);
		goto out;
	}
	grh = rdma_ah_read_grh(&qa.ah_attr);
	if (qa.qp_state != IB_QPS_RTS || !(rdma_ah_get_ah_flags(&qa.ah_attr) & IB_AH_GRH) ||
	    memcmp(grh->dgid.raw, c->gid.raw, sizeof(c->gid.raw)) || grh->sgid_index != c->gid_index) {
		pr_err("rxe_sr_ulp_test: query: FAIL state %d, GRH flag %d, dgid %pI6, sgid_index %u (want RTS, %pI6, %u)\n",
		       qa.qp_state, !!(rdma_ah_get_ah_flags(&qa.ah_attr) & IB_AH_GRH), grh->dgid.raw,
		       grh->sgid_index, c->gid.raw, c->gid_index);
		goto out;
	}
	if (grh->sgid_attr) {
		pr_err("rxe_sr_ulp_test: query: FAIL grh.sgid_attr is %p, not NULL\n", grh->sgid_attr);
		goto out;
	}
	ok = true;
	pr_info("rxe_sr_ulp_test: query: PASS the address vector, with sgid_attr NULL\n");
out:
	drop_side(&a);
	drop_side(&b);
	return ok;
}

static bool check_fastreg(struct ctx *c)
{
	static const unsigned int bad_sizes[] = { SZ_2K, 3 * SZ_4K };
	u32 max = c->ib->attrs.max_fast_reg_page_list_len;
	u64 cap = c->ib->attrs.page_size_cap;
	struct scatterlist sg;
	struct ib_mr *mr, *over;
	bool ok = true;
	unsigned int i;
	int n;

	if (!max || !(cap & SZ_4K) || (cap & SZ_2K)) {
		pr_err("rxe_sr_ulp_test: fastreg: FAIL max_fast_reg_page_list_len %u, page_size_cap %#llx (want > 0, 4 KiB offered, 2 KiB not)\n",
		       max, cap);
		return false;
	}
	mr = ib_alloc_mr(c->pd, IB_MR_TYPE_MEM_REG, max);
	if (IS_ERR(mr)) {
		pr_err("rxe_sr_ulp_test: fastreg: FAIL ib_alloc_mr of %u pages (max_fast_reg_page_list_len): %ld\n",
		       max, PTR_ERR(mr));
		return false;
	}
	over = ib_alloc_mr(c->pd, IB_MR_TYPE_MEM_REG, max + 1);
	if (!IS_ERR(over)) {
		pr_err("rxe_sr_ulp_test: fastreg: FAIL ib_alloc_mr of %u pages (max_fast_reg_page_list_len + 1) succeeded\n",
		       max + 1);
		ib_dereg_mr(over);
		ok = false;
	}
	sg_init_one(&sg, c->buf, SZ_4K);
	if (ib_dma_map_sg(c->ib, &sg, 1, DMA_BIDIRECTIONAL) != 1) {
		pr_err("rxe_sr_ulp_test: fastreg: FAIL ib_dma_map_sg\n");
		ok = false;
		goto out;
	}
	n = ib_map_mr_sg(mr, &sg, 1, NULL, SZ_4K);
	if (n != 1) {
		pr_err("rxe_sr_ulp_test: fastreg: FAIL ib_map_mr_sg with 4 KiB pages returned %d, want 1\n", n);
		ok = false;
	}
	for (i = 0; i < ARRAY_SIZE(bad_sizes); i++) {
		n = ib_map_mr_sg(mr, &sg, 1, NULL, bad_sizes[i]);
		if (n != -EINVAL) {
			pr_err("rxe_sr_ulp_test: fastreg: FAIL ib_map_mr_sg with %u-byte pages returned %d, want %d\n",
			       bad_sizes[i], n, -EINVAL);
			ok = false;
		}
	}
	ib_dma_unmap_sg(c->ib, &sg, 1, DMA_BIDIRECTIONAL);
out:
	ib_dereg_mr(mr);
	if (ok)
		pr_info("rxe_sr_ulp_test: fastreg: PASS an MR of %u pages (max_fast_reg_page_list_len), not %u; 4 KiB pages mapped, 2 and 12 KiB refused\n",
			max, max + 1);
	return ok;
}

static bool check_ah(struct ctx *c)
{
	int max = c->ib->attrs.max_ah, n = 0, ret = 0;
	struct rdma_ah_attr attr = {};
	struct ib_ah **ahs, *ah;
	bool ok = false;

	if (max <= 0) {
		pr_err("rxe_sr_ulp_test: ah: FAIL max_ah %d\n", max);
		return false;
	}
	ahs = kvcalloc(max + 1, sizeof(*ahs), GFP_KERNEL);
	if (!ahs) {
		pr_err("rxe_sr_ulp_test: ah: FAIL no memory\n");
		return false;
	}
	attr.type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_port_num(&attr, 1);
	rdma_ah_set_grh(&attr, &c->gid, 0, c->gid_index, 64, 0);
	/* One past the limit is asked for: it must be refused. */
	while (n <= max) {
		ah = rdma_create_ah(c->pd, &attr, RDMA_CREATE_AH_SLEEPABLE);
		if (IS_ERR(ah)) {
			ret = PTR_ERR(ah);
			break;
		}
		ahs[n++] = ah;
		if (n % 1024 == 0)
			cond_resched();
	}
	if (n != max || !ret) {
		pr_err("rxe_sr_ulp_test: ah: FAIL %d kernel AHs created before a refusal (%d), want max_ah %d\n",
		       n, ret, max);
		goto out;
	}
	rdma_destroy_ah(ahs[--n], RDMA_DESTROY_AH_SLEEPABLE);
	ah = rdma_create_ah(c->pd, &attr, RDMA_CREATE_AH_SLEEPABLE);
	if (IS_ERR(ah)) {
		pr_err("rxe_sr_ulp_test: ah: FAIL no AH after one of %d was destroyed (%ld)\n", max, PTR_ERR(ah));
		goto out;
	}
	ahs[n++] = ah;
	ok = true;
	pr_info("rxe_sr_ulp_test: ah: PASS %d kernel AHs (max_ah), the next refused (%d), one more once one was destroyed\n",
		max, ret);
out:
	while (n)
		rdma_destroy_ah(ahs[--n], RDMA_DESTROY_AH_SLEEPABLE);
	kvfree(ahs);
	return ok;
}

static bool check_mcast(struct ctx *c)
{
	int max = c->ib->attrs.max_mcast_qp_attach, made = 0, attached = 0, ret;
	struct ib_cq_init_attr ca = { .cqe = 16 };
	struct ib_qp_init_attr qa = {};
	/* ::ffff:239.7.7.9, a RoCEv2 IPv4 multicast GID. */
	union ib_gid mgid = { .raw = { [10] = 0xff, [11] = 0xff, [12] = 239, [13] = 7, [14] = 7, [15] = 9 } };
	struct ib_qp **qps;
	struct ib_cq *cq;
	bool ok = false;

	if (max <= 0 || max > 1024) {
		pr_err("rxe_sr_ulp_test: mcast: FAIL max_mcast_qp_attach %d\n", max);
		return false;
	}
	qps = kcalloc(max + 1, sizeof(*qps), GFP_KERNEL);
	if (!qps) {
		pr_err("rxe_sr_ulp_test: mcast: FAIL no memory\n");
		return false;
	}
	cq = ib_create_cq(c->ib, NULL, NULL, c, &ca);
	if (IS_ERR(cq)) {
		pr_err("rxe_sr_ulp_test: mcast: FAIL ib_create_cq (%ld)\n", PTR_ERR(cq));
		kfree(qps);
		return false;
	}
	qa.send_cq = cq;
	qa.recv_cq = cq;
	qa.qp_type = IB_QPT_UD;
	qa.sq_sig_type = IB_SIGNAL_ALL_WR;
	qa.cap.max_send_wr = 1;
	qa.cap.max_recv_wr = 1;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	for (made = 0; made <= max; made++) {
		qps[made] = ib_create_qp(c->pd, &qa);
		if (IS_ERR(qps[made])) {
			pr_err("rxe_sr_ulp_test: mcast: FAIL set-up: UD QP %d (%ld)\n", made, PTR_ERR(qps[made]));
			goto out;
		}
	}
	for (attached = 0; attached < max; attached++) {
		ret = ib_attach_mcast(qps[attached], &mgid, 0);
		if (ret) {
			pr_err("rxe_sr_ulp_test: mcast: FAIL QP %d of %d (max_mcast_qp_attach) refused (%d)\n",
			       attached + 1, max, ret);
			goto out;
		}
	}
	ret = ib_attach_mcast(qps[max], &mgid, 0);
	if (!ret) {
		pr_err("rxe_sr_ulp_test: mcast: FAIL QP %d (max_mcast_qp_attach + 1) attached\n", max + 1);
		ib_detach_mcast(qps[max], &mgid, 0);
		goto out;
	}
	ok = true;
	pr_info("rxe_sr_ulp_test: mcast: PASS %d UD QPs attached to one group (max_mcast_qp_attach), the next refused (%d)\n",
		max, ret);
out:
	while (attached)
		ib_detach_mcast(qps[--attached], &mgid, 0);
	while (made)
		ib_destroy_qp(qps[--made]);
	ib_destroy_cq(cq);
	kfree(qps);
	return ok;
}

/*
 * A CQ that QPs still use cannot be destroyed: the verbs core refuses (-EBUSY) before the
 * driver hears of it, and the CQ keeps working: a SEND between two QPs on it, posted after
 * the refusal, completes on it. Then the QPs go and the CQ with them.
 */
static bool check_cq_busy(struct ctx *c)
{
	struct side a = {}, b = {};
	struct ib_wc wc;
	bool ok = false;
	int ret, got = 0, tries;

	if (make_side(c, &a, NULL) || make_side(c, &b, NULL)) {
		pr_err("rxe_sr_ulp_test: cq_busy: FAIL set-up\n");
		goto out;
	}
	ret = ib_destroy_cq_user(a.cq, NULL);
	if (ret != -EBUSY) {
		pr_err("rxe_sr_ulp_test: cq_busy: FAIL destroying a CQ its QP uses returned %d\n", ret);
		if (!ret)
			a.cq = NULL;
		goto out;
	}
	if (connect_qp(c, a.qp, b.qp->qp_num, 0, 0, 7) || connect_qp(c, b.qp, a.qp->qp_num, 0, 0, 7) ||
	    post_recv(c, b.qp, 2) || post_send(c, a.qp, 1)) {
		pr_err("rxe_sr_ulp_test: cq_busy: FAIL connecting or posting after the refusal\n");
		goto out;
	}
	for (tries = 0; tries < 2000 && got < 2; tries++) {
		got += ib_poll_cq(a.cq, 1, &wc) == 1 && wc.status == IB_WC_SUCCESS;
		got += ib_poll_cq(b.cq, 1, &wc) == 1 && wc.status == IB_WC_SUCCESS;
		if (got < 2)
			msleep(1);
	}
	if (got < 2) {
		pr_err("rxe_sr_ulp_test: cq_busy: FAIL the SEND after the refusal did not complete (%d of 2)\n", got);
		goto out;
	}
	ok = true;
	pr_info("rxe_sr_ulp_test: cq_busy: PASS a CQ in use refused (-EBUSY), then a SEND completed on it\n");
out:
	if (!IS_ERR_OR_NULL(a.qp))
		ib_destroy_qp(a.qp);
	if (!IS_ERR_OR_NULL(b.qp))
		ib_destroy_qp(b.qp);
	if (!IS_ERR_OR_NULL(a.cq))
		ib_destroy_cq(a.cq);
	if (!IS_ERR_OR_NULL(b.cq))
		ib_destroy_cq(b.cq);
	return ok;
}

static int __init ulp_test_init(void)
{
	struct ctx *c;
	bool ok;
	int ret;

	if (leak) {
		/* leak_set made them. */
		pr_info("rxe_sr_ulp_test: leaked %u objects of 256 bytes on purpose\n", leak);
		return 0;
	}
	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c)
		return -ENOMEM;
	c->buf = kzalloc(4096, GFP_KERNEL);
	c->ib = ib_device_get_by_name(dev, RDMA_DRIVER_UNKNOWN);
	if (!c->buf || !c->ib) {
		pr_err("rxe_sr_ulp_test: FAIL no device %s or no memory\n", dev);
		ret = -ENODEV;
		goto out_free;
	}
	if (find_gid(c)) {
		pr_err("rxe_sr_ulp_test: FAIL no RoCEv2 IPv4 GID on %s\n", dev);
		ret = -ENODEV;
		goto out_put;
	}
	c->pd = ib_alloc_pd(c->ib, 0);
	if (IS_ERR(c->pd)) {
		ret = PTR_ERR(c->pd);
		goto out_put;
	}
	ok = check_flush(c);
	ok = check_handler(c) && ok;
	ok = check_query(c) && ok;
	ok = check_fastreg(c) && ok;
	ok = check_ah(c) && ok;
	ok = check_mcast(c) && ok;
	ok = check_cq_busy(c) && ok;
	ret = ok ? 0 : -EIO;
	ib_dealloc_pd(c->pd);
out_put:
	ib_device_put(c->ib);
out_free:
	kfree(c->buf);
	kfree(c);
	/* The checks ran at load; nothing stays loaded on failure. */
	return ret;
}

static void __exit ulp_test_exit(void)
{
}

module_init(ulp_test_init);
module_exit(ulp_test_exit);
MODULE_DESCRIPTION("rxe_sr selftest: kernel ULP behaviour (error flush, handlers, device limits)");
MODULE_LICENSE("GPL");
