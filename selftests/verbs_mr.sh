#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# timeout: 120
# guests: 1
# Memory registration through the stock rxe provider (pyverbs): MRs pin user memory and get
# distinct keys (lkey == rkey, as rdma_rxe); unsupported or inconsistent access flags and
# unmappable ranges are refused with an error; nothing is left at unload, also after a
# process dies holding MRs. (A freed index comes back only after the 2^19 MR indices have
# cycled, which a test cannot reach here.)
. "$HOST_SHARE/selftests/lib/lib.sh"
sr_up

out=$(python3 - <<'PY' 2>&1
import errno
import pyverbs.device as d
import pyverbs.enums as e
from pyverbs.pd import PD
from pyverbs.mr import MR
from pyverbs.pyverbs_error import PyverbsRDMAError

LW, RW, RR, RA = e.IBV_ACCESS_LOCAL_WRITE, e.IBV_ACCESS_REMOTE_WRITE, e.IBV_ACCESS_REMOTE_READ, e.IBV_ACCESS_REMOTE_ATOMIC
ctx = d.Context(name='sr0')
pd = PD(ctx)
mrs = [MR(pd, n, LW | RW | RR | RA) for n in (1, 4096, 1 << 20, (1 << 20) + 123)]
keys = [(m.lkey, m.rkey) for m in mrs]
assert all(l == r for l, r in keys), keys
assert len({l for l, _ in keys}) == len(keys), "duplicate keys %r" % keys
print("registered %d MRs, keys %s" % (len(mrs), ["%#x" % l for l, _ in keys]))
many = [MR(pd, 8192, LW) for _ in range(200)]
assert len({m.lkey for m in many} | {l for l, _ in keys}) == 204
print("200 more MRs, all keys distinct")
for m in many:
    m.close()

def refused(desc, fn, want):
    try:
        fn()
    except PyverbsRDMAError as ex:
        ok = ex.error_code in want
        print("%s %s: errno %d" % ("refused" if ok else "BAD", desc, ex.error_code))
        return
    print("BAD %s: accepted" % desc)

refused("remote write without local write", lambda: MR(pd, 4096, RW), (errno.EINVAL,))
mwb = MR(pd, 4096, LW | e.IBV_ACCESS_MW_BIND)
print("accepted memory-window bind access")
mwb.close()
# Explicit ODP is offered (verbs_mr_odp.sh); implicit ODP, the whole address space, is not.
refused("implicit on-demand paging", lambda: MR(pd, 0, LW | e.IBV_ACCESS_ON_DEMAND, implicit=True),
        (errno.EOPNOTSUPP,))
for m in mrs:
    m.close()
pd.close(); ctx.close()
print("closed")
PY
)
rc=$?
printf '%s\n' "$out"
[ $rc = 0 ] || fail "pyverbs script failed"
expect_grep "MRs registered with lkey == rkey, distinct" '^registered 4 MRs' "$out"
expect_grep "200 more, distinct" '^200 more MRs, all keys distinct$' "$out"
expect_grep "MW bind access accepted (memory windows)" '^accepted memory-window bind access$' "$out"
[ "$(printf '%s\n' "$out" | grep -c '^refused')" = 2 ] || fail "not every bad registration was refused as expected"
printf '%s\n' "$out" | grep -q '^BAD' && fail "a bad registration was accepted or refused wrongly"

# An unmappable range, through the raw verbs (pyverbs allocates its own buffers): a
# process registering memory it does not have gets EFAULT.
python3 - <<'PY' || fail "unmapped-range check failed"
import ctypes, errno
lib = ctypes.CDLL("libibverbs.so.1", use_errno=True)
lib.ibv_get_device_list.restype = ctypes.POINTER(ctypes.c_void_p)
lib.ibv_open_device.restype = ctypes.c_void_p
lib.ibv_open_device.argtypes = [ctypes.c_void_p]
lib.ibv_alloc_pd.restype = ctypes.c_void_p
lib.ibv_alloc_pd.argtypes = [ctypes.c_void_p]
lib.ibv_reg_mr.restype = ctypes.c_void_p
lib.ibv_reg_mr.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
lib.ibv_get_device_name.restype = ctypes.c_char_p
lib.ibv_get_device_name.argtypes = [ctypes.c_void_p]
devs = lib.ibv_get_device_list(None)
dev = next(devs[i] for i in range(16) if devs[i] and lib.ibv_get_device_name(devs[i]) == b"sr0")
ctx = lib.ibv_open_device(dev)
pd = lib.ibv_alloc_pd(ctx)
mr = lib.ibv_reg_mr(pd, ctypes.c_void_p(0x10000000000), 1 << 20, 1)
err = ctypes.get_errno()
assert not mr, "registered unmapped memory"
print("refused unmapped range: errno %d" % err)
assert err in (errno.EFAULT, errno.ENOMEM), err
PY

python3 -c '
import os, pyverbs.device as d, pyverbs.enums as e
from pyverbs.pd import PD
from pyverbs.mr import MR
ctx = d.Context(name="sr0"); pd = PD(ctx); mrs = [MR(pd, 65536, e.IBV_ACCESS_LOCAL_WRITE) for _ in range(5)]
os._exit(0)' || fail "crashing process script failed"

sr_down_clean
