/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Input of the module's own bindgen run (see Kbuild): the kernel headers rxe_sr uses and
 * its C glue. The kernel's `bindings` crate carries no RDMA headers, hence this file.
 */
#include <linux/crc32.h>
#include <linux/delay.h>
#include <linux/if_arp.h>
#include <linux/inetdevice.h>
#include <linux/netdevice.h>
#include <linux/random.h>
#include <linux/vmalloc.h>
#include <net/addrconf.h>
#include <net/udp_tunnel.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_umem_odp.h>
#include <rdma/rdma_netlink.h>
#include <uapi/rdma/rdma_user_rxe.h>
#include "rxe_sr_glue.h"
