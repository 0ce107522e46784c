# SPDX-License-Identifier: GPL-2.0
# Helpers the pyverbs selftests share: RoCEv2 GIDs of IPv4 addresses and bringing an RC QP
# from RESET to RTS towards a peer QP.
import pyverbs.enums as e
from pyverbs.qp import QPAttr
from pyverbs.addr import AHAttr, GlobalRoute, GID


def v4_gid(ip):
    """The IPv4-mapped RoCEv2 GID of a dotted IPv4 address."""
    return GID("0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x" % tuple(int(x) for x in ip.split(".")))


def connect_rc(qp, rqpn, rq_psn, sq_psn, dgid, gidx, access=0, max_rd=1, timeout=14, rnr_retry=7):
    """RESET -> INIT -> RTR -> RTS towards QP `rqpn` at `dgid`, path MTU 1024."""
    a = QPAttr(); a.qp_state = e.IBV_QPS_INIT; a.pkey_index = 0; a.port_num = 1; a.qp_access_flags = access
    qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_ACCESS_FLAGS)
    a = QPAttr(); a.qp_state = e.IBV_QPS_RTR; a.path_mtu = e.IBV_MTU_1024; a.dest_qp_num = rqpn
    a.rq_psn = rq_psn; a.max_dest_rd_atomic = max_rd; a.min_rnr_timer = 12
    a.ah_attr = AHAttr(gr=GlobalRoute(dgid=dgid, sgid_index=gidx), is_global=1, port_num=1)
    qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_AV | e.IBV_QP_PATH_MTU | e.IBV_QP_DEST_QPN | e.IBV_QP_RQ_PSN
              | e.IBV_QP_MAX_DEST_RD_ATOMIC | e.IBV_QP_MIN_RNR_TIMER)
    a = QPAttr(); a.qp_state = e.IBV_QPS_RTS; a.timeout = timeout; a.retry_cnt = 7; a.rnr_retry = rnr_retry
    a.sq_psn = sq_psn; a.max_rd_atomic = max_rd
    qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_TIMEOUT | e.IBV_QP_RETRY_CNT | e.IBV_QP_RNR_RETRY
              | e.IBV_QP_SQ_PSN | e.IBV_QP_MAX_QP_RD_ATOMIC)


def ud_up(qp, qkey, rts=True):
    """RESET -> INIT -> RTR (-> RTS, send PSN 0) for a UD QP on port 1 with Q_Key `qkey`."""
    a = QPAttr(); a.qp_state = e.IBV_QPS_INIT; a.pkey_index = 0; a.port_num = 1; a.qkey = qkey
    qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_QKEY)
    a = QPAttr(); a.qp_state = e.IBV_QPS_RTR
    qp.modify(a, e.IBV_QP_STATE)
    if rts:
        a = QPAttr(); a.qp_state = e.IBV_QPS_RTS; a.sq_psn = 0
        qp.modify(a, e.IBV_QP_STATE | e.IBV_QP_SQ_PSN)
