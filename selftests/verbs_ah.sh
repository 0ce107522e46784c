#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 120
# Address handles through the stock rxe provider (pyverbs): AHs to the peer's RoCEv2 GID
# (the core resolves its MAC) are created and destroyed, many at once; an AH without a GRH,
# on a port that does not exist, or with a GID index that is not there, is refused; nothing
# is left at unload.
. "$HOST_SHARE/selftests/lib/lib.sh"
[ "$GUESTS" -ge 2 ] || skip "needs two guests"
if is_server; then
  sr_up
  gidx=$(roce_gid_index sr0) || fail "no RoCEv2 GID"
  out=$(GIDX=$gidx timeout 60 python3 - <<'PY' 2>&1
import errno, os
import pyverbs.device as d
from pyverbs.pd import PD
from pyverbs.addr import AH, AHAttr, GlobalRoute, GID
from pyverbs.pyverbs_error import PyverbsRDMAError, PyverbsError

gidx = int(os.environ["GIDX"])
ctx = d.Context(name="sr0")
pd = PD(ctx)
peer = GID("0000:0000:0000:0000:0000:ffff:0a4d:0002")  # ::ffff:10.77.0.2
def attr(port=1, sgid=gidx, is_global=1):
    return AHAttr(gr=GlobalRoute(dgid=peer, sgid_index=sgid), is_global=is_global, port_num=port)
ahs = [AH(pd, attr=attr()) for _ in range(50)]
print("created 50 AHs to ::ffff:10.77.0.2")
for a in ahs:
    a.close()
print("destroyed them")
def refused(desc, fn):
    try:
        fn()
        print("BAD %s accepted" % desc)
    except (PyverbsRDMAError, PyverbsError) as ex:
        print("refused %s: %s" % (desc, getattr(ex, "error_code", ex)))
refused("no GRH", lambda: AH(pd, attr=attr(is_global=0)))
refused("port 2", lambda: AH(pd, attr=attr(port=2)))
refused("GID index 200", lambda: AH(pd, attr=attr(sgid=200)))
keep = [AH(pd, attr=attr()) for _ in range(5)]
import sys; sys.stdout.flush()
os._exit(0)    # dies holding 5 AHs
PY
)
  rc=$?
  printf '%s\n' "$out"
  [ $rc = 0 ] || fail "pyverbs script failed (exit $rc)"
  expect_grep "AHs created" '^created 50 AHs to ::ffff:10.77.0.2$' "$out"
  expect_grep "AHs destroyed" '^destroyed them$' "$out"
  [ "$(printf '%s\n' "$out" | grep -c '^refused')" = 3 ] || fail "bad AHs were not all refused"
  printf '%s\n' "$out" | grep -q '^BAD' && fail "a bad AH was accepted"
  sr_down_clean
fi
sync_point done
