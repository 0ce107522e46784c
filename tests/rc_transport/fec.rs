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
