// SPDX-License-Identifier: GPL-2.0
//! Memory-window rules (proto::rc::mw): bind, reach and invalidate for type 1 and type 2
//! windows, and the checks that refuse them (IBTA C10-72..75, o10-36/37).

use rxe_sr::proto::rc::mw::*;

const PD: usize = 0x1000;
const OTHER_PD: usize = 0x2000;
const MW_KEY: u32 = 0x8_0000 << 8 | 0x11;

fn mr(access: u32) -> MrView {
    MrView { lkey: 0x100 << 8 | 7, pd: PD, iova: 0x10_0000, length: 0x1000, access }
}

fn bind(addr: u64, length: u64, access: u32) -> BindReq {
    BindReq { mw_rkey: MW_KEY, new_rkey: 0xaa, addr, length, access }
}

const MR_OK: u32 = ACCESS_LOCAL_WRITE | ACCESS_MW_BIND;

#[test]
fn type1_binds_reaches_and_unbinds() {
    let mut w = Window::new(MwType::Type1, MW_KEY, PD);
    assert_eq!(w.state, MwState::Valid);
    // Valid but empty: nothing reachable.
    assert_eq!(w.reach(MW_KEY, PD, 5, ACCESS_REMOTE_WRITE, 0x10_0000, 8), None);
    w.bind(&bind(0x10_0100, 0x100, ACCESS_REMOTE_WRITE | ACCESS_LOCAL_WRITE), PD, 5, Some(mr(MR_OK))).unwrap();
    let key = (MW_KEY & !0xff) | 0xaa;
    assert_eq!(w.rkey, key);
    // Any QP of the PD; inside the range only; the granted access only; the new key only.
    assert_eq!(w.reach(key, PD, 9, ACCESS_REMOTE_WRITE, 0x10_0100, 0x100), Some(mr(0).lkey));
    assert_eq!(w.reach(key, PD, 9, ACCESS_REMOTE_WRITE, 0x10_01ff, 2), None);
    assert_eq!(w.reach(key, PD, 9, ACCESS_REMOTE_READ, 0x10_0100, 8), None);
    assert_eq!(w.reach(MW_KEY, PD, 9, ACCESS_REMOTE_WRITE, 0x10_0100, 8), None);
    assert_eq!(w.reach(key, OTHER_PD, 9, ACCESS_REMOTE_WRITE, 0x10_0100, 8), None);
    assert_eq!(w.reach(key, PD, 9, ACCESS_REMOTE_WRITE, u64::MAX, 2), None);
    // Rebinding with length 0 unbinds (test_invalidate_mw_type1's way).
    let unbind = BindReq { mw_rkey: key, new_rkey: 0xab, addr: 0x10_0000, length: 0, access: 0 };
    w.bind(&unbind, PD, 5, Some(mr(MR_OK))).unwrap();
    assert_eq!(w.reach(w.rkey, PD, 9, 0, 0x10_0000, 0), None);
    // Type 1 windows cannot be invalidated.
    assert_eq!(w.invalidate(w.rkey, PD), Err(MwError::Invalid));
}

#[test]
fn type2_binds_from_free_only_and_only_its_qp_reaches() {
    let mut w = Window::new(MwType::Type2, MW_KEY, PD);
    assert_eq!(w.state, MwState::Free);
    assert_eq!(w.bind(&bind(0x10_0000, 0, ACCESS_REMOTE_WRITE), PD, 5, Some(mr(MR_OK))), Err(MwError::Invalid));
    assert_eq!(w.bind(&bind(0x10_0000, 8, ACCESS_REMOTE_WRITE), PD, 5, None), Err(MwError::Invalid));
    w.bind(&bind(0x10_0000, 0x1000, ACCESS_REMOTE_WRITE), PD, 5, Some(mr(MR_OK))).unwrap();
    let key = w.rkey;
    assert_eq!(w.reach(key, PD, 5, ACCESS_REMOTE_WRITE, 0x10_0000, 0x1000), Some(mr(0).lkey));
    assert_eq!(w.reach(key, PD, 6, ACCESS_REMOTE_WRITE, 0x10_0000, 8), None);
    // Bound: a second bind is refused until it is invalidated.
    let again = BindReq { mw_rkey: key, ..bind(0x10_0000, 8, ACCESS_REMOTE_WRITE) };
    assert_eq!(w.bind(&again, PD, 5, Some(mr(MR_OK))), Err(MwError::Invalid));
    assert_eq!(w.invalidate(key ^ 1, PD), Err(MwError::Invalid));
    // A QP of another PD cannot invalidate it (locally or by SEND with invalidate).
    assert_eq!(w.invalidate(key, OTHER_PD), Err(MwError::Invalid));
    assert_eq!(w.state, MwState::Valid);
    w.invalidate(key, PD).unwrap();
    assert_eq!(w.state, MwState::Free);
    assert_eq!(w.reach(key, PD, 5, ACCESS_REMOTE_WRITE, 0x10_0000, 8), None);
    assert_eq!(w.invalidate(key, PD), Err(MwError::Invalid));
    w.bind(&again, PD, 5, Some(mr(MR_OK))).unwrap();
}

#[test]
fn bind_checks_the_region_and_the_pds() {
    let fresh = || Window::new(MwType::Type1, MW_KEY, PD);
    let w_req = bind(0x10_0000, 0x10, ACCESS_REMOTE_WRITE);
    // C10-73: the region must allow binding; C10-74: a writable window needs local write.
    assert_eq!(fresh().bind(&w_req, PD, 1, Some(mr(ACCESS_LOCAL_WRITE))), Err(MwError::Invalid));
    assert_eq!(fresh().bind(&w_req, PD, 1, Some(mr(ACCESS_MW_BIND))), Err(MwError::Invalid));
    fresh().bind(&bind(0x10_0000, 0x10, ACCESS_REMOTE_READ), PD, 1, Some(mr(ACCESS_MW_BIND))).unwrap();
    // C10-75: inside the region.
    assert_eq!(fresh().bind(&bind(0x0f_ffff, 0x10, ACCESS_REMOTE_READ), PD, 1, Some(mr(MR_OK))), Err(MwError::Invalid));
    assert_eq!(fresh().bind(&bind(0x10_0ff0, 0x11, ACCESS_REMOTE_READ), PD, 1, Some(mr(MR_OK))), Err(MwError::Invalid));
    assert_eq!(fresh().bind(&bind(u64::MAX, 2, ACCESS_REMOTE_READ), PD, 1, Some(mr(MR_OK))), Err(MwError::Invalid));
    // C10-72: window, QP and region on one PD.
    assert_eq!(fresh().bind(&w_req, OTHER_PD, 1, Some(mr(MR_OK))), Err(MwError::Invalid));
    let other = MrView { pd: OTHER_PD, ..mr(MR_OK) };
    assert_eq!(fresh().bind(&w_req, PD, 1, Some(other)), Err(MwError::Invalid));
    // The current key must be named; zero-based windows are not offered; unknown flags fail.
    let stale = BindReq { mw_rkey: MW_KEY ^ 1, ..w_req };
    assert_eq!(fresh().bind(&stale, PD, 1, Some(mr(MR_OK))), Err(MwError::Invalid));
    let zb = bind(0, 0x10, ACCESS_REMOTE_READ | ACCESS_ZERO_BASED);
    assert_eq!(fresh().bind(&zb, PD, 1, Some(mr(MR_OK))), Err(MwError::NotSupported));
    let odd = bind(0x10_0000, 0x10, 1 << 12);
    assert_eq!(fresh().bind(&odd, PD, 1, Some(mr(MR_OK))), Err(MwError::Invalid));
    // A failed bind changes nothing.
    let mut w = fresh();
    let _ = w.bind(&stale, PD, 1, Some(mr(MR_OK)));
    assert_eq!(w, fresh());
}
