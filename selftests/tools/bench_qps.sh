#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The guest side of `make bench`'s QP sweep (and of make run's short version of it):
# perftest over 1, 10, 100, 1000 and 5000 RC QPs (BENCH_QPS), lossless and at 1% loss on both
# guests' egress (BENCH_LOSSES), for rdma_rxe and for rxe_sr under each recovery= scheme
# (the module reloaded for every QP count and loss, so its counters are that point's),
# BENCH_REPS runs each. At each point every tool of BENCH_QP_OPS (ib_write_bw by default;
# ib_send_bw, ib_read_bw) runs with every message size of BENCH_QP_SIZES (4096 by
# default), in event mode (perftest -e: it sleeps on the completion channel, as an
# application that does not busy-poll; BENCH_QP_EVENT=0 polls), but for ib_write_bw,
# which perftest can only poll. A run moves a fixed number of messages, BENCH_MSGS for
# 4 KiB (default 32000), scaled to the size (a sixteenth for 64 KiB, four times for 1 KiB
# or less), spread over the QPs (at least 20 per QP), and the goodput is perftest's for
# those bytes: a timed run (-D) counts only the completions inside its sampling window,
# and with 100 QPs each 128 deep, perftest's completion moderation (one signalled
# completion per 100 messages a QP) leaves that window empty for every driver that serves
# its QPs fairly. Every driver gets the same depths at a QP count: perftest's 128, or less
# where one CQ of depth x QPs would pass rdma_rxe's max_cqe (32767): 32 at 1000 QPs, 6 at
# 5000.
# Each guest measures its CPU while the run's packets move (cpu_watch in lib.sh: the busy
# and kernel ticks of /proc/stat, setup and teardown left out).
# The client (g2) writes OUT/bench.csv, one row per run:
#   driver,op,qps,loss,gbps,mbytes,secs_c,busy_c,kernel_c,secs_s,busy_s,kernel_s,size,mode
# (c: the client, the requester of the WRITEs, SENDs and READs; s: the server, their
# responder; busy and kernel in USER_HZ ticks; mode: event or poll), and OUT/pools.csv:
# per point (all its tools and sizes) the SR pools' peaks on each guest's device (g1, the
# responder, and g2, the requester), the GBN fallbacks of both, and the QPs that negotiated
# the SR format (driver,qps,loss,rsp_units_peak,rsp_blocks_peak,rsp_melo_peak,
# req_units_peak,req_blocks_peak,req_melo_peak,gbn_fallbacks,qps_negotiated), and the
# requester's waits for the device's in-flight budget and its most PSNs in flight
# (req_inflight_waits,req_inflight_peak), and each guest's OUT/counters-SCHEME-QPS-LOSS.txt:
# every counter of its device at the end of the point. A scheme may carry module parameters
# after a "+" (e.g. fasr+dev_inflight_psns=0), as in make run.
. "$HOST_SHARE/selftests/lib/lib.sh"
TEST_INDEX=bench
msgs=${BENCH_MSGS:-32000}
reps=${BENCH_REPS:-3}
# BENCH_QPS, BENCH_LOSSES, BENCH_SCHEMES, BENCH_QP_OPS, BENCH_QP_SIZES and BENCH_REF=0
# narrow or widen the sweep.
read -r -a qps_list <<< "${BENCH_QPS:-1 10 100 1000 5000}"
read -r -a losses <<< "${BENCH_LOSSES:-0 1}"
read -r -a schemes <<< "${BENCH_SCHEMES:-gbn fasr srnic irn melo}"
read -r -a ops <<< "${BENCH_QP_OPS:-ib_write_bw}"
read -r -a sizes <<< "${BENCH_QP_SIZES:-4096}"
ref=${BENCH_REF:-1}
mode=event; [ "${BENCH_QP_EVENT:-1}" = 1 ] || mode=poll
total=$(( (ref + ${#schemes[@]}) * ${#qps_list[@]} * ${#losses[@]} * ${#ops[@]} * ${#sizes[@]} * reps ))
n=0
is_client && echo "driver,op,qps,loss,gbps,mbytes,secs_c,busy_c,kernel_c,secs_s,busy_s,kernel_s,size,mode" > "$OUT/bench.csv"
is_client && echo "driver,qps,loss,rsp_units_peak,rsp_blocks_peak,rsp_melo_peak,req_units_peak,req_blocks_peak,req_melo_peak,gbn_fallbacks,qps_negotiated,req_inflight_waits,req_inflight_peak" > "$OUT/pools.csv"
# pools_of: this guest's pool peaks and GBN fallbacks, comma-separated.
pools_of() { echo "$(stat_of sr_pool_units_peak),$(stat_of sr_pool_blocks_peak),$(stat_of melo_pool_blocks_peak),$(stat_of sr_gbn_fallbacks)"; }

# depth QPS: the TX depth every driver can take at QPS QPs (one CQ of depth x QPS entries
# within rdma_rxe's max_cqe of 32767).
depth() { local d=$((32767 / $1)); echo $(( d > 128 ? 128 : d )); }
# messages SIZE: the messages of a run at SIZE bytes: BENCH_MSGS for 4 KiB, as many bytes
# for larger ones, four times as many for 1 KiB or less (the small-message rate).
messages() {
  if [ "$1" -le 1024 ]; then echo $(( msgs * 4 ));
  elif [ "$1" -ge 4096 ]; then echo $(( msgs * 4096 / $1 ));
  else echo "$msgs"; fi
}
# per_qp QPS SIZE: the iterations of each QP, a multiple of perftest's completion moderation
# (its default of 100, or the TX depth when lower): perftest counts each completion it
# polls as that many messages and stops polling once the count reaches iterations x QPs, so
# with a remainder the QPs whose last completion came early could make up for one still
# waiting for an earlier completion, which perftest then never polled (rc_perftest.sh).
per_qp() {
  local n k m
  n=$(messages "$2")
  k=$(( (n + $1 - 1) / $1 ))
  m=$(depth "$1"); m=$(( m > 100 ? 100 : m ))
  k=$(( k < 20 ? 20 : k ))
  echo $(( (k + m - 1) / m * m ))
}

# point DRIVER DEV QPS LOSS: the runs of one point, every tool and size.
point() {
  local op size
  for op in "${ops[@]}"; do
    for size in "${sizes[@]}"; do
      runs "$@" "$op" "$size"
    done
  done
}

# runs DRIVER DEV QPS LOSS TOOL SIZE: BENCH_REPS runs of TOOL with SIZE-byte messages.
runs() {
  local bw rep mine theirs iters d key args m=$mode
  iters=$(per_qp "$3" "$6")
  d=$(depth "$3")
  args=(-q "$3" -t "$d")
  # A receive queue as deep as the send queue: one CQ of both within max_cqe.
  [ "$5" = ib_send_bw ] && args+=(-r "$d")
  # perftest has no event mode for WRITEs ("Events feature not available on WRITE verb").
  [ "$5" = ib_write_bw ] && m=poll
  [ "$m" = event ] && args+=(-e)
  for rep in $(seq "$reps"); do
    key="$1-$5-$6-$3-$4-$rep"
    rm -f /tmp/cpu.stop /tmp/cpu.out
    cpu_watch "$2" /tmp/cpu.out /tmp/cpu.stop &
    local watcher=$!
    # The seconds argument only bounds the run (perftest_pair's timeout).
    bw=$(PERF_ITERS=$iters PERF_SIZE=$6 perftest_pair "$2" "$5" "$4" 40 "${args[@]}") || bw=
    touch /tmp/cpu.stop
    wait "$watcher"
    mine=$(cat /tmp/cpu.out 2>/dev/null || echo "0 0 0 0")
    share_put "cpu-$key" "$mine"
    sync_point "cpu-$key"
    n=$((n + 1))
    if is_client; then
      theirs=$(share_get 1 "cpu-$key")
      read -r sc bc kc _ <<< "$mine"
      read -r ss bs ks _ <<< "$theirs"
      echo "$1,$5,$3,$4,${bw},$(( iters * $3 * $6 / 1000000 )),$sc,$bc,$kc,$ss,$bs,$ks,$6,$m" >> "$OUT/bench.csv"
      log "progress $n/$total: $1 $5 $6 B $3 QPs $4% loss run $rep: ${bw:-failed} Gb/s; CPU client $bc ticks in $sc s, server $bs in $ss s"
    fi
  done
}

log "benchmark: $total runs (${ops[*]}; ${sizes[*]} B; $mode mode)"
if [ "$ref" = 1 ]; then
  rxe_ref_up || { echo "rdma_rxe did not come up"; exit 1; }
  for q in "${qps_list[@]}"; do
    for l in "${losses[@]}"; do point rdma_rxe rxe0 "$q" "$l"; done
  done
  rxe_ref_down
fi
for scheme in "${schemes[@]}"; do
  for q in "${qps_list[@]}"; do
    for l in "${losses[@]}"; do
      modprobe -r rxe_sr 2>/dev/null
      read -ra params <<< "$(printf '%s' "$scheme" | tr '+' ' ')"
      load_rdma_core && modprobe rxe_sr recovery="${params[0]}" "${params[@]:1}" && rdma link add sr0 type rxe_sr netdev eth0 \
        && wait_port_active sr0 || { echo "rxe_sr recovery=$scheme did not come up"; exit 1; }
      sync_point "up-$scheme-$q-$l"
      point "rxe_sr-$scheme" sr0 "$q" "$l"
      share_put "pools-$scheme-$q-$l" "$(pools_of)"
      # Every counter of this guest's device at the end of the point, for a closer look.
      rdma statistic show link sr0/1 > "$OUT/counters-$scheme-$q-$l.txt" 2>&1 || true
      sync_point "down-$scheme-$q-$l"
      if is_client; then
        IFS=, read -r ru rb rm rf <<< "$(share_get 1 "pools-$scheme-$q-$l")"
        IFS=, read -r qu qb qm qf <<< "$(pools_of)"
        echo "rxe_sr-$scheme,$q,$l,$ru,$rb,$rm,$qu,$qb,$qm,$(( ${rf:-0} + ${qf:-0} )),$(stat_of sr_qps_negotiated),$(stat_of inflight_waits),$(stat_of inflight_peak)" >> "$OUT/pools.csv"
      fi
      rdma link del sr0; modprobe -r rxe_sr
    done
  done
done
