// SPDX-License-Identifier: GPL-2.0
//! Forged packets from an off-path attacker who knows the peers' addresses and QPNs but not the
//! PSNs: the SR window and adoption rules, and random forgeries among the real packets.

use super::common::{check_mixed_data, exchange, post_mixed, post_write};
use super::*;
use proptest::prelude::*;
use proptest::test_runner::{RngSeed, TestRunner};
use rxe_sr::proto::rc::SR_DEFAULT_WINDOW_PSNS;
use rxe_sr::proto::wire::caps::RequesterState;

/// `bytes` with BTH TVer set to `tver` and the PSN moved by `d`.
fn forge(bytes: &[u8], tver: u8, d: i32) -> Vec<u8> {
    let mut v = Mutation::Psn(d).apply(bytes);
    v[1] = (v[1] & 0xf0) | tver;
    v
}

#[test]
fn a_forged_sr_packet_does_not_switch_a_standard_peers_stream() {
    for scheme in SR_SCHEMES {
        // A runs go-back-N (a standard peer, as rdma_rxe is), B an SR scheme.
        let mut n = Net::with_schemes(Service::Rc, 1024, Link::CLEAN, Scheme::Gbn, scheme);
        let data = post_write(&mut n, 8192, 9);
        let sent = n.send(true);
        // One forged copy of the first packet in the SR format at a wrong PSN, before it.
        n.deliver(true, &forge(&sent[0], 1, 5));
        let sr = n.b.resp.sr().unwrap();
        assert!(!sr.active(), "{scheme:?}: the SR format was never offered");
        assert_eq!(sr.counters.refused, 1, "{scheme:?}");
        exchange(&mut n, sent);
        assert!(n.run(100_000), "{scheme:?}: the stream goes on");
        assert_eq!(n.b.mem.region(0x200)[..8192], data[..], "{scheme:?}");
        assert_eq!(
            n.a.send_cqes.iter().map(|c| c.status).collect::<Vec<_>>(),
            [WcStatus::Success]
        );
        assert_eq!(
            n.b.resp.sr().unwrap().counters.stale_standard,
            0,
            "{scheme:?}"
        );
    }
}

#[test]
fn sr_packets_past_the_window_or_refused_past_rcv_nxt_change_nothing() {
    for scheme in SR_SCHEMES {
        let mut n = Net::with_schemes(Service::Rc, 1024, Link::CLEAN, scheme, scheme);
        post_write(&mut n, 1024, 1);
        assert!(n.run(10_000), "{scheme:?}: the switch to the SR format");
        let data = post_write(&mut n, 8192, 2);
        let sent = n.send(true);
        assert!(PacketRepr::parse(&sent[0]).unwrap().is_sr(), "{scheme:?}");
        let before = (n.b.shared.sr_pool().usage(), n.b.shared.bits_pool().usage());
        // Far past RCV-NXT (FaSR's and MELO's bitmaps would reach there), just past the
        // window, and a WRITE with a bad R_Key past RCV-NXT.
        let window = SR_DEFAULT_WINDOW_PSNS as i32;
        n.deliver(true, &forge(&sent[0], 1, 2 * window + 152));
        n.deliver(true, &forge(&sent[3], 1, window + 76));
        let mut bad = PacketRepr::parse(&sent[1])
            .unwrap()
            .ext
            .reth
            .map(|_| sent[1].clone())
            .unwrap();
        bad[12 + 8] ^= 0xff; // RETH R_Key (BTH is 12 bytes, the R_Key after the 8-byte VA)
        assert_ne!(
            PacketRepr::parse(&bad).unwrap().ext.reth.unwrap().rkey,
            0x200
        );
        n.deliver(true, &forge(&bad, 1, 3));
        let c = n.b.resp.sr().unwrap().counters;
        assert_eq!(
            (c.out_of_window, c.early_refused, c.ooo_placed),
            (2, 1, 0),
            "{scheme:?}"
        );
        assert!(
            !n.b.error,
            "{scheme:?}: a forged packet past RCV-NXT fails nothing"
        );
        let after = (n.b.shared.sr_pool().usage(), n.b.shared.bits_pool().usage());
        assert_eq!(
            format!("{before:?}"),
            format!("{after:?}"),
            "{scheme:?}: no pool taken"
        );
        exchange(&mut n, sent);
        assert!(n.run(100_000), "{scheme:?}: the stream goes on");
        assert_eq!(n.b.mem.region(0x200)[..8192], data[..], "{scheme:?}");
        assert!(
            n.a.send_cqes.iter().all(|c| c.status == WcStatus::Success),
            "{scheme:?}"
        );
        release_and_check_pools(&mut n);
    }
}

#[test]
fn only_a_response_in_flight_decides_the_capability_exchange() {
    for scheme in SR_SCHEMES {
        let mut n = Net::with_schemes(Service::Rc, 1024, Link::CLEAN, scheme, scheme);
        post_write(&mut n, 1024, 1);
        let sent = n.send(true);
        // A forged plain ACK (no echo) at a PSN A never sent reaches A first.
        let acks = n.deliver(true, &sent[0]);
        n.deliver(false, &Mutation::Psn(1000).apply(&acks[0]));
        assert!(
            matches!(
                n.a.req.sr().unwrap().state(),
                RequesterState::Probing { .. }
            ),
            "{scheme:?}"
        );
        n.deliver(false, &acks[0]);
        assert!(
            matches!(n.a.req.sr().unwrap().state(), RequesterState::Sr(_)),
            "{scheme:?}"
        );
    }
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let limit = prop_oneof![
        Just(0u32),
        Just(1),
        Just(0x7F_FFFF),
        Just(0xFF_FFFF),
        Just(0x8000_0000),
        Just(u32::MAX),
        any::<u32>()
    ];
    let psn = prop_oneof![
        -3i32..=3,
        Just(-(1 << 22)),
        Just(1 << 22),
        Just(0x7F_FFFF),
        any::<i32>()
    ];
    prop_oneof![
        (0usize..96, 1u8..=255).prop_map(|(at, mask)| Mutation::Flip { at, mask }),
        (0usize..64, limit).prop_map(|(at, value)| Mutation::Set32 { at, value }),
        psn.prop_map(Mutation::Psn),
        any::<u8>().prop_map(Mutation::Opcode),
        any::<usize>().prop_map(Mutation::Truncate),
        proptest::collection::vec(any::<u8>(), 1..12).prop_map(Mutation::Extend),
    ]
}

/// The mixed workload under `scheme` with forged copies of the wire's packets per
/// `plan`; returns the forged packets the receive path took in and those it refused.
fn forged_run(
    service: Service,
    scheme: Scheme,
    plan: Vec<(u64, Mutation)>,
) -> Result<(u64, u64), TestCaseError> {
    let rc = service == Service::Rc;
    let mut n = Net::with_schemes(service, 1024, Link::CLEAN, scheme, scheme);
    n.hostile = plan;
    post_mixed(&mut n, service);
    let finished = n.run(2_000_000);
    // A forged request may rightly fail a QP (a NAK, then the requester's error); it
    // must not leave both waiting forever.
    prop_assert!(
        finished || n.a.error || n.b.error,
        "neither finished nor failed"
    );
    for s in [&mut n.a, &mut n.b] {
        prop_assert!(
            s.mem.region(0x300).iter().all(|&b| b == 0),
            "memory without remote rights written"
        );
    }
    // 16 send WRs posted (13 on UC), 7 receive WQEs.
    let posted = if rc { 16 } else { 13 };
    prop_assert!(
        n.a.send_cqes.len() <= posted && n.a.retired <= posted,
        "{} send completions",
        n.a.send_cqes.len()
    );
    prop_assert!(
        n.b.recv_cqes.len() <= 7,
        "{} receive completions",
        n.b.recv_cqes.len()
    );
    release_and_check_pools(&mut n);
    // The same devices (their pools) serve a new QP pair, every byte checked.
    let mut m = Net::with_schemes(service, 1024, Link::CLEAN, scheme, scheme);
    m.a.shared = std::mem::replace(&mut n.a.shared, Box::new(DeviceShared::new()));
    m.b.shared = std::mem::replace(&mut n.b.shared, Box::new(DeviceShared::new()));
    post_mixed(&mut m, service);
    prop_assert!(m.run(2_000_000), "the next QP pair stalled");
    check_mixed_data(&mut m, rc);
    release_and_check_pools(&mut m);
    Ok((n.forged_taken, n.forged_refused))
}

/// The first finding (FaSR, the plan kept as found): among A's first packets, forged
/// copies (another P_Key, which the kernel's receive path drops but the transport alone
/// does not see; a WRITE moved to a later PSN) led to an RNR NAK that sent A's cursor
/// back into the 64 KiB SEND, and B's acknowledgment of everything arrived while the
/// cursor was behind. A then waited forever: the acknowledged requests were not retired
/// (retiring waited for the cursor to pass them, and UNACK moved no further), and the
/// READ behind the cursor had its responses ignored and was not asked for again.
#[test]
fn an_ack_past_the_cursor_gone_back_retires_and_asks_for_the_read_again() {
    let plan = vec![
        (132, Mutation::Flip { at: 92, mask: 32 }),
        (2, Mutation::Flip { at: 2, mask: 1 }),
        (
            3,
            Mutation::Set32 {
                at: 10,
                value: 0x7F_FFFF,
            },
        ),
        (0, Mutation::Flip { at: 2, mask: 1 }),
    ];
    let mut n = Net::with_schemes(Service::Rc, 1024, Link::CLEAN, Scheme::Fasr, Scheme::Fasr);
    n.hostile = plan;
    post_mixed(&mut n, Service::Rc);
    assert!(
        n.run(2_000_000),
        "stalled with {} of 16 completions",
        n.a.send_cqes.len()
    );
    assert!(!n.a.error && !n.b.error);
    assert_eq!(n.a.send_cqes.len(), 16);
    assert!(
        n.a.send_cqes.iter().all(|c| c.status == WcStatus::Success),
        "{:?}",
        n.a.send_cqes
    );
    assert!(
        n.a.req.counters.rnr_naks > 0,
        "the plan no longer draws an RNR NAK"
    );
}

#[test]
fn forged_packets_among_real_ones_break_nothing() {
    // RXE_SR_FUZZ_CASES sets the runs per scheme (e.g. 5000 for a long look), and
    // RXE_SR_FUZZ_SEED another set of them (default 0).
    let cases = std::env::var("RXE_SR_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(48);
    let seed: u64 = std::env::var("RXE_SR_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    // The mixed workload puts about 250 packets on the wire.
    let plan = proptest::collection::vec((0u64..300, mutation()), 1..48);
    let schemes = [
        Scheme::Gbn,
        Scheme::Fasr,
        Scheme::Srnic,
        Scheme::Irn,
        Scheme::Melo,
    ];
    let runs = schemes
        .into_iter()
        .map(|s| (Service::Rc, s))
        .chain([(Service::Uc, Scheme::Gbn)]);
    for (k, (service, scheme)) in runs.enumerate() {
        let config = ProptestConfig {
            cases,
            failure_persistence: None,
            rng_seed: RngSeed::Fixed(
                (0xF0_26ED + k as u64) ^ seed.wrapping_mul(0x9E37_79B9_7F4A_7C15),
            ),
            ..ProptestConfig::default()
        };
        let (taken, refused) = (std::cell::Cell::new(0u64), std::cell::Cell::new(0u64));
        let r = TestRunner::new(config).run(&plan, |plan| {
            let (t, f) = forged_run(service, scheme, plan)?;
            taken.set(taken.get() + t);
            refused.set(refused.get() + f);
            Ok(())
        });
        if let Err(e) = r {
            panic!("{service:?} {scheme:?}: {e}");
        }
        let (taken, refused) = (taken.get(), refused.get());
        eprintln!("{service:?} {scheme:?}: {cases} runs; forged packets taken in {taken}, refused as malformed {refused}");
        // At least a third of the forgeries must get past the parser (about half do), or
        // this tests only the parser.
        assert!(
            2 * taken > refused,
            "{service:?} {scheme:?}: {taken} taken, {refused} refused"
        );
    }
}
