#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 90
# guests: 1
# What kernel ULPs (nvme-rdma, iser, rds, smc) rely on, through the kernel verbs: the test
# module selftests/kmod/rxe_sr_ulp_test.ko checks, on sr0:
#  - flush: an RC QP in Error completes every work request it holds, in order: with 8 SENDs
#    outstanding (the first fails with RNR_RETRY_EXC_ERR) and 4 receives posted, all 12
#    complete (1 error, 11 WR_FLUSH_ERR), none is lost;
#  - handler: a completion handler that moves its own QP to Error neither deadlocks nor is
#    refused (rxe_sr runs consumer callbacks without holding the QP's lock);
#  - query: ib_query_qp returns the QP's address vector with grh.sgid_attr NULL (the
#    core only lends that pointer during modify_qp);
#  - fastreg: an MR of max_fast_reg_page_list_len pages is allocated, one of a page more
#    refused; ib_map_mr_sg refuses a page size page_size_cap does not offer;
#  - ah: kernel AHs count against max_ah (the next one is refused);
#  - mcast: max_mcast_qp_attach UD QPs attach to one multicast group, the next is refused;
#  - cq_busy: destroying a CQ that a QP still uses is refused (-EBUSY, by the verbs core, as
#    for any driver), and the CQ keeps working (a SEND completes on it).
# The limits are read from the device's attributes.
. "$HOST_SHARE/selftests/lib/lib.sh"
ko=$HOST_SHARE/ko/$(uname -r)/rxe_sr_ulp_test.ko
[ -f "$ko" ] || fail "the test module was not built ($ko)"
sr_up
rc=0
timeout 60 insmod "$ko" dev=sr0 || rc=$?
out=$(dmesg_since_mark | grep 'rxe_sr_ulp_test' || true)
printf '%s\n' "$out"
[ $rc = 0 ] || fail "the test module's checks failed (insmod exit $rc)"
rmmod rxe_sr_ulp_test 2>/dev/null || true
expect_grep "flush: every work request completed" '^.*rxe_sr_ulp_test: flush: PASS' "$out"
expect_grep "handler: moved its QP to Error" '^.*rxe_sr_ulp_test: handler: PASS' "$out"
expect_grep "query: address vector without the borrowed sgid_attr" '^.*rxe_sr_ulp_test: query: PASS' "$out"
expect_grep "fastreg: max_fast_reg_page_list_len and page_size_cap enforced" '^.*rxe_sr_ulp_test: fastreg: PASS' "$out"
expect_grep "ah: kernel AHs bounded by max_ah" '^.*rxe_sr_ulp_test: ah: PASS' "$out"
expect_grep "mcast: max_mcast_qp_attach QPs per group" '^.*rxe_sr_ulp_test: mcast: PASS' "$out"
expect_grep "cq_busy: a CQ in use is not destroyed, and keeps working" '^.*rxe_sr_ulp_test: cq_busy: PASS' "$out"
sr_down_clean
