// SPDX-License-Identifier: GPL-2.0
//! The FEC shim between two QPs: repairs only between peers that both run it, losses
//! rebuilt before the transport sees them, every byte checked.

use super::common::*;
use super::*;
use rxe_sr::proto::fec::FecParams;

const GEOMETRY: (u32, u32) = (8, 2);

fn fec() -> Option<FecParams> {
    FecParams::new(GEOMETRY.0, GEOMETRY.1)
}

/// The mixed workload from A to B, A's and B's devices running `scheme` and FEC as given.
fn mixed_fec(link: Link, scheme: Scheme, fa: Option<FecParams>, fb: Option<FecParams>) -> Net {
    let mut n = Net::with_fec(Service::Rc, 1024, link, (scheme, fa), (scheme, fb));
    post_mixed(&mut n, Service::Rc);
    assert!(n.run(2_000_000), "stalled: {scheme:?}");
    check_mixed_data(&mut n, true);
    n
}

/// A stream of 200 WRITEs of 8 KiB from A to B on `link` (with an SR scheme the first on
/// a clean link, so that the SR exchange settles); returns the packets A resent and the net.
fn writes_fec(link: Link, scheme: Scheme, f: Option<FecParams>) -> (u64, Net) {
    let settle = scheme != Scheme::Gbn;
    let first = if settle { Link::CLEAN } else { link };
    let n = Net::with_fec(Service::Rc, 1024, first, (scheme, f), (scheme, f));
    writes_on(n, link, scheme, settle)
}

#[test]
fn repairs_go_only_to_a_peer_that_took_the_offer() {
    for scheme in ALL_SCHEMES {
        let (_, n) = writes_fec(Link::CLEAN, scheme, fec());
        let a = n.a.fec.as_ref().unwrap();
        assert!(
            n.a.req.fec_on(),
            "{scheme:?}: both run FEC, A's offer not taken"
        );
        assert!(
            a.repairs_sent > 100,
            "{scheme:?}: {} repairs",
            a.repairs_sent
        );
        assert_eq!((n.b.repairs_refused, n.repairs_lost), (0, 0));
        // Lossless: nothing to rebuild, nothing held at the end.
        let b = n.b.fec.as_ref().unwrap();
        assert_eq!(
            (b.rebuilt, b.rebuilt_bad, b.rx.held()),
            (0, 0, 0),
            "{scheme:?}"
        );
        // Both, the mixed workload (READs, atomics, SENDs): every byte where it belongs.
        let n = mixed_fec(Link::CLEAN, scheme, fec(), fec());
        assert_eq!(n.b.fec.as_ref().unwrap().rx.held(), 0, "{scheme:?}");
        // A runs FEC, B does not: B answers no offer and sees no repair.
        let n = mixed_fec(Link::CLEAN, scheme, fec(), None);
        assert!(!n.a.req.fec_on(), "{scheme:?}");
        assert_eq!(
            (n.a.fec.as_ref().unwrap().repairs_sent, n.b.repairs_refused),
            (0, 0)
        );
        // B runs FEC, A does not: A offers nothing, sends no repair.
        let n = mixed_fec(Link::CLEAN, scheme, None, fec());
        assert!(!n.a.req.fec_on() && n.a.fec.is_none(), "{scheme:?}");
        assert_eq!(n.b.fec.as_ref().unwrap().rx.held(), 0);
    }
}

/// At 1% loss, each scheme: every byte arrives, losses are rebuilt (none wrongly), and
/// the requester resends fewer packets than on the same link without FEC.
#[test]
fn losses_are_rebuilt_under_every_scheme() {
    for scheme in ALL_SCHEMES {
        let (mut with, mut without, mut rebuilt) = (0, 0, 0);
        for seed in 1..=4u64 {
            let link = Link {
                loss_ppm: 10_000,
                seed: seed * 7919,
                ..Link::CLEAN
            };
            let (resent, n) = writes_fec(link, scheme, fec());
            let b = n.b.fec.as_ref().unwrap();
            assert_eq!(b.rebuilt_bad, 0, "{scheme:?} seed {seed}");
            rebuilt += b.rebuilt;
            with += resent;
            without += writes_fec(link, scheme, None).0;
        }
        assert!(rebuilt > 0, "{scheme:?}: nothing rebuilt");
        assert!(
            with < without,
            "{scheme:?}: {with} packets resent with FEC, {without} without"
        );
    }
}

/// Units given up (5% loss, 32 packets a unit) make B ask for more redundancy; A takes
/// each ask and both code with what B asked for last, every byte arriving. Devices set
/// differently meet at the receiving side's setting.
#[test]
fn the_receiver_asks_for_its_parameters_and_for_more_redundancy() {
    let wide = FecParams::new(32, 1);
    for scheme in ALL_SCHEMES {
        let link = Link {
            loss_ppm: 50_000,
            seed: 104_729,
            ..Link::CLEAN
        };
        let (_, n) = writes_fec(link, scheme, wide);
        let (a, b) = (n.a.fec.as_ref().unwrap(), n.b.fec.as_ref().unwrap());
        assert!(b.asks_sent > 0, "{scheme:?}: B never asked");
        let last = *a.asks_taken.last().expect("A took no ask");
        assert!(
            last.n() < 32 && a.asks_taken.iter().all(|p| *p != wide.unwrap()),
            "{scheme:?}: asked for {:?}",
            a.asks_taken
        );
        // Both code with one of the parameters asked for (the last ask may have come
        // after the last coded packet).
        assert_eq!(a.enc.params(), b.rx.params(), "{scheme:?}");
        assert!(a.asks_taken.contains(&a.enc.params()), "{scheme:?}");
        assert_eq!(b.rebuilt_bad, 0, "{scheme:?}");
        assert!(b.rebuilt > 0, "{scheme:?}: nothing rebuilt after the asks");

        // A is set to 32:4, B to 8:2: B asks for its own once, and losses are rebuilt.
        let link = Link {
            loss_ppm: 10_000,
            seed: 7919,
            ..Link::CLEAN
        };
        let settle = scheme != Scheme::Gbn;
        let first = if settle { Link::CLEAN } else { link };
        let n = Net::with_fec(
            Service::Rc,
            1024,
            first,
            (scheme, FecParams::new(32, 4)),
            (scheme, fec()),
        );
        let (_, n) = writes_on(n, link, scheme, settle);
        let (a, b) = (n.a.fec.as_ref().unwrap(), n.b.fec.as_ref().unwrap());
        assert_eq!(a.asks_taken.first().copied(), fec(), "{scheme:?}");
        assert_eq!(b.rx.params(), a.enc.params(), "{scheme:?}");
        assert!(b.rebuilt > 0 && b.rebuilt_bad == 0, "{scheme:?}");
    }
}
