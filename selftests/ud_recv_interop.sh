#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 180
# UD SEND from rdma_rxe (g2) to rxe_sr (g1): rxe_sr's receive path takes standard RoCEv2
# (ICRC, BTH, DETH checked), finds the QP, consumes a receive WQE, scatters the GRH area and
# the message into the user's MR and completes it: 16 messages (two-SGE gather, inline,
# immediate) arrive verified, and rdma_recvs counts 16.
. "$HOST_SHARE/selftests/lib/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
ud_interop recv
