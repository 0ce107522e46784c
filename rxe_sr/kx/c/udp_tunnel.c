// SPDX-License-Identifier: GPL-2.0
/*
 * rxe_sr: the RoCEv2 UDP sockets (one pair per network namespace, kx/udp_tunnel.rs) and who
 * holds a port when opening one fails. C because udp_sock_create() and the UDP table look-ups
 * are static inlines and RCU-protected socket fields.
 */
#include <linux/netdevice.h>
#include <linux/udp.h>
#include <linux/user_namespace.h>
#include <net/udp.h>
#include <net/udp_tunnel.h>
#include <net/ipv6.h>

#include "rxe_sr_glue.h"

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
