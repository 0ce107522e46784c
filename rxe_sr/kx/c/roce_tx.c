// SPDX-License-Identifier: GPL-2.0
/*
 * rxe_sr: RoCEv2 datagrams around the IB bytes Rust built: the egress device, the route, the
 * UDP and IP headers (as rdma_rxe's prepare4/prepare6), a payload attached by reference as
 * page fragments (zero-copy transmit), the hand-over to the IP layer, and the multicast MAC
 * filter. C because routing, header building and fragments are static inlines over struct
 * sk_buff, struct page and the flow structures, with no Rust API in 6.12.
 */
#include <linux/netdevice.h>
#include <linux/inetdevice.h>
#include <linux/if_ether.h>
#include <linux/skbuff.h>
#include <linux/highmem.h>
#include <linux/udp.h>
#include <net/ip.h>
#include <net/route.h>
#include <net/ipv6.h>
#include <net/ip6_route.h>
#include <net/addrconf.h>
#include <net/if_inet6.h>

#include "rxe_sr_pages.h"
#include "rxe_sr_glue.h"

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

/*
 * An skb with room for the headers and the first @linear of the @len IB bytes; the caller
 * attaches the rest as fragments. The UDP and IP lengths count all @len.
 */
static struct sk_buff *rxe_sr_alloc_datagram(struct net_device *ndev, unsigned int iphdr_len,
					     u16 sport, const void *ib, size_t len, size_t linear)
{
	unsigned int hdr = LL_RESERVED_SPACE(ndev) + iphdr_len + sizeof(struct udphdr);
	struct sk_buff *skb;
	struct udphdr *udph;

	if (linear > len || len > IP_MAX_MTU || (ib && linear != len))
		return NULL;
	skb = alloc_skb(hdr + linear + ndev->needed_tailroom, GFP_KERNEL);
	if (!skb)
		return NULL;
	skb_reserve(skb, hdr);
	/* Without @ib the caller writes the bytes itself. */
	if (ib)
		skb_put_data(skb, ib, len);
	else
		skb_put(skb, linear);
	skb->dev = ndev;
	__skb_push(skb, sizeof(*udph));
	skb_reset_transport_header(skb);
	udph = udp_hdr(skb);
	udph->source = htons(sport);
	udph->dest = htons(4791);
	udph->len = htons(sizeof(*udph) + len);
	udph->check = 0;
	return skb;
}

/*
 * Builds an skb holding IPv4 + UDP headers and the @len IB bytes at @ib (BTH .. ICRC, the
 * ICRC not yet filled), routed out of @ndev unless @local (loopback: the receive path takes
 * it directly). Without @ib, the skb holds room for the first @linear IB bytes and the
 * caller attaches the others (rxe_sr_glue_skb_add_mem, rxe_sr_glue_skb_add_chunk). The IP
 * header, ID included, is complete, so the caller can compute the ICRC before sending it
 * with rxe_sr_glue_xmit(). Returns the skb or an ERR_PTR.
 */
struct sk_buff *rxe_sr_glue_build_v4(struct net_device *port_ndev, __be32 saddr, __be32 daddr,
				     u16 sport, u8 tos, u8 ttl, const void *ib, size_t len,
				     size_t linear, bool local)
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
	skb = rxe_sr_alloc_datagram(ndev, sizeof(*iph), sport, ib, len, linear);
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
	iph->tot_len = htons(sizeof(*iph) + sizeof(struct udphdr) + len);
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
				     u32 flow_label, const void *ib, size_t len, size_t linear,
				     bool local)
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
	skb = rxe_sr_alloc_datagram(ndev, sizeof(*ip6h), sport, ib, len, linear);
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
	ip6h->payload_len = htons(sizeof(struct udphdr) + len);
	ip6h->nexthdr = IPPROTO_UDP;
	ip6h->hop_limit = hop_limit;
	memcpy(&ip6h->saddr, saddr, sizeof(ip6h->saddr));
	memcpy(&ip6h->daddr, daddr, sizeof(ip6h->daddr));
	return skb;
}

/* Counts @len bytes appended to @skb's fragments. */
static void rxe_sr_skb_grown(struct sk_buff *skb, size_t len)
{
	skb->len += len;
	skb->data_len += len;
	skb->truesize += len;
}

/*
 * Appends a chunk of @len bytes, a page fragment of the skb's own, for the caller to write
 * (a copied piece of payload, or, @last, the pad and ICRC: only those may take the last
 * fragment slot). NULL when no slot is left or no memory.
 */
void *rxe_sr_glue_skb_add_chunk(struct sk_buff *skb, size_t len, bool last)
{
	int i = skb_shinfo(skb)->nr_frags;
	struct page *page;
	void *buf;

	if (!len || len > PAGE_SIZE || i >= MAX_SKB_FRAGS - (last ? 0 : 1))
		return NULL;
	buf = netdev_alloc_frag(len);
	if (!buf)
		return NULL;
	page = virt_to_head_page(buf);
	/* The fragment takes over the reference netdev_alloc_frag gave. */
	skb_fill_page_desc_noacc(skb, i, page, buf - page_address(page), len);
	rxe_sr_skb_grown(skb, len);
	return buf;
}

/*
 * Appends @n bytes at @in of @page by reference: the skb holds a page reference until it
 * is freed, so the page outlives the MR (or buffer) it came from. A piece that runs on
 * from the last fragment extends it. -EMSGSIZE when only the trailer's slot is left.
 */
static int rxe_sr_skb_add_page(struct sk_buff *skb, struct page *page, size_t in, size_t n)
{
	int i = skb_shinfo(skb)->nr_frags;

	if (i && skb_can_coalesce(skb, i, page, in)) {
		skb_frag_size_add(&skb_shinfo(skb)->frags[i - 1], n);
	} else {
		if (i >= MAX_SKB_FRAGS - 1)
			return -EMSGSIZE;
		get_page(page);
		skb_fill_page_desc_noacc(skb, i, page, in, n);
	}
	rxe_sr_skb_grown(skb, n);
	/* User memory: the stack must not assume the bytes stay as they are. */
	skb_shinfo(skb)->flags |= SKBFL_SHARED_FRAG;
	return 0;
}

/* Appends a copy of @n bytes at @in of @page (a page that cannot be lent: slab memory). */
static int rxe_sr_skb_copy_page(struct sk_buff *skb, struct page *page, size_t in, size_t n)
{
	void *buf = rxe_sr_glue_skb_add_chunk(skb, n, false);

	if (!buf)
		return -EMSGSIZE;
	rxe_sr_page_copy(page, in, buf, n, false);
	return 0;
}

/*
 * Appends @len bytes of memory to @skb as fragments, by reference where the page may be
 * lent (sendpage_ok), and feeds them into the CRC-32 state *@crc as it goes. The memory is
 * byte @offset on of the @npages pages at @pages (pinned user memory), or, when @pages is
 * NULL, at kernel address @offset (the direct map; -EFAULT outside it). -EMSGSIZE when the
 * fragment slots run out (the caller builds the datagram linear instead).
 */
int rxe_sr_glue_skb_add_mem(struct sk_buff *skb, void *const *pages, size_t npages,
			    size_t offset, size_t len, u32 *crc)
{
	if (offset + len < offset || (pages && offset + len > npages * PAGE_SIZE))
		return -EFAULT;
	while (len) {
		size_t in = offset & ~PAGE_MASK, n = min_t(size_t, len, PAGE_SIZE - in);
		struct page *page;
		void *va;
		int err;

		if (pages) {
			page = pages[offset >> PAGE_SHIFT];
		} else {
			if (!virt_addr_valid((void *)offset))
				return -EFAULT;
			page = virt_to_page((void *)offset);
		}
		err = sendpage_ok(page) ? rxe_sr_skb_add_page(skb, page, in, n) :
					   rxe_sr_skb_copy_page(skb, page, in, n);
		if (err)
			return err;
		va = kmap_local_page(page);
		*crc = rxe_sr_glue_crc32(*crc, va + in, n);
		kunmap_local(va);
		offset += n;
		len -= n;
	}
	return 0;
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
