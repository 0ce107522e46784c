// SPDX-License-Identifier: GPL-2.0
/*
 * rxe_sr: RoCEv2 datagrams around the IB bytes Rust built: the egress device, the route, the
 * UDP and IP headers (as rdma_rxe's prepare4/prepare6), the hand-over to the IP layer, and the
 * multicast MAC filter. C because routing and header building are static inlines over struct
 * sk_buff and the flow structures, with no Rust API in 6.12.
 */
#include <linux/netdevice.h>
#include <linux/inetdevice.h>
#include <linux/if_ether.h>
#include <linux/skbuff.h>
#include <linux/udp.h>
#include <net/ip.h>
#include <net/route.h>
#include <net/ipv6.h>
#include <net/ip6_route.h>
#include <net/addrconf.h>
#include <net/if_inet6.h>

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
