#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 180
# UD SEND from rxe_sr (g1) to rdma_rxe (g2): proof that rxe_sr's packets are standard
# RoCEv2 (the upstream C driver checks the ICRC, headers, P_Key and Q_Key and drops
# anything else). 16 messages: gathered from two SGEs, inline, and with immediate data; g2
# receives every one with the right bytes, length, source QP and immediate; g1's send CQ
# reports each as a success and sent_pkts counts 16.
. "$HOST_SHARE/selftests/lib/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
ud_interop send
