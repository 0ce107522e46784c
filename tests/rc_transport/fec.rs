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

/// 60 READs of 16 KiB from B's memory into A's, up to 16 in flight, on `link`, after a
/// WRITE on a clean link that settles the SR exchange and the FEC offer; every byte and
/// completion checked. Returns the READ responses that went on the wire, and the net.
fn reads_fec(link: Link, scheme: Scheme, f: Option<FecParams>) -> (u64, Net) {
    let mut n = Net::with_fec(Service::Rc, 1024, Link::CLEAN, (scheme, f), (scheme, f));
    n.a.cfg.max_rd_atomic = 16;
    let op = SendOp::RdmaWrite {
        remote: Remote {
            addr: 0x20_0000,
            rkey: 0x200,
        },
    };
    // The SR exchange, then the FEC offer, each answered by a response.
    for _ in 0..3 {
        n.post(true, wqe(op, SendOpcode::RdmaWrite, 0x100, 0x10_0000, 64))
            .unwrap();
        assert!(n.run(100_000));
    }
    assert_eq!(n.a.req.fec_on(), f.is_some(), "{scheme:?}");
    n.link = link;
    let (len, count) = (16384usize, 60u64);
    let data = pattern(35, len * 4);
    n.b.mem.region(0x100)[..len * 4].copy_from_slice(&data);
    let before = n.read_responses;
    for i in 0..count {
        post_read(&mut n, (i % 4) * len as u64, len);
        if i % 16 == 15 || i + 1 == count {
            assert!(n.run(4_000_000), "{scheme:?} stalled");
        }
    }
    assert_eq!(n.a.send_cqes.len(), count as usize + 3, "{scheme:?}");
    assert!(
        n.a.send_cqes.iter().all(|c| c.status == WcStatus::Success),
        "{scheme:?}"
    );
    assert!(
        n.a.mem.region(0x200)[..len * 4] == data[..],
        "{scheme:?}: data"
    );
    (n.read_responses - before, n)
}

/// The four seeds of a link losing 1% of packets the loss tests compare on.
fn one_percent_links() -> impl Iterator<Item = (u64, Link)> {
    (1..=4u64).map(|seed| {
        let link = Link {
            loss_ppm: 10_000,
            seed: seed * 7919,
            ..Link::CLEAN
        };
        (seed, link)
    })
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
        for (seed, link) in one_percent_links() {
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

/// READ responses are coded too: lossless, B's responder sends repairs of them and A's
/// requester holds nothing at the end; at 1% loss A rebuilds lost responses (none
/// wrongly), and B sends fewer READ responses than on the same link without FEC, as
/// fewer READs are asked for again.
#[test]
fn read_responses_are_rebuilt_under_every_scheme() {
    for scheme in ALL_SCHEMES {
        let (_, n) = reads_fec(Link::CLEAN, scheme, fec());
        let (a, b) = (n.a.fec.as_ref().unwrap(), n.b.fec.as_ref().unwrap());
        assert!(
            b.repairs_sent > 50,
            "{scheme:?}: {} repairs",
            b.repairs_sent
        );
        assert_eq!((a.rebuilt, a.resp_rx.held()), (0, 0), "{scheme:?}");
        let (mut with, mut without, mut rebuilt) = (0, 0, 0);
        for (seed, link) in one_percent_links() {
            let (sent, n) = reads_fec(link, scheme, fec());
            let a = n.a.fec.as_ref().unwrap();
            assert_eq!(
                (a.rebuilt_bad, a.resp_rx.held()),
                (0, 0),
                "{scheme:?} seed {seed}"
            );
            rebuilt += a.resp_rebuilt;
            with += sent;
            without += reads_fec(link, scheme, None).0;
        }
        assert!(rebuilt > 0, "{scheme:?}: no response rebuilt");
        assert!(
            with < without,
            "{scheme:?}: {with} READ responses sent with FEC, {without} without"
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

/// 120 UC WRITEs of 8 KiB from A to B, the first on a clean link (the offer settles: UC
/// has no response, B's take answers it), the rest on `link`; A's and B's devices run FEC
/// as given. Returns the WRITEs whose every byte arrived, and the net.
fn uc_writes(link: Link, fa: Option<FecParams>, fb: Option<FecParams>) -> (usize, Net) {
    let (len, count) = (8192usize, 120usize);
    let mut n = Net::with_fec(
        Service::Uc,
        1024,
        Link::CLEAN,
        (Scheme::Gbn, fa),
        (Scheme::Gbn, fb),
    );
    for i in 0..count {
        let off = i * len;
        n.a.mem.region(0x100)[off..off + len].copy_from_slice(&pattern(i as u8, len));
        let op = SendOp::RdmaWrite {
            remote: Remote {
                addr: 0x20_0000 + off as u64,
                rkey: 0x200,
            },
        };
        let w = wqe(
            op,
            SendOpcode::RdmaWrite,
            0x100,
            0x10_0000 + off as u64,
            len as u32,
        );
        n.post(true, w).unwrap();
        if i == 0 || i % 40 == 39 || i + 1 == count {
            assert!(n.run(4_000_000), "stalled");
        }
        if i == 0 {
            assert_eq!(n.a.req.fec_on(), fa.is_some() && fb.is_some());
            n.link = link;
        }
    }
    assert_eq!(n.a.send_cqes.len(), count);
    let whole = (0..count)
        .filter(|i| {
            let r = i * len..(i + 1) * len;
            n.b.mem.region(0x200)[r.clone()] == n.a.mem.region(0x100)[r]
        })
        .count();
    (whole, n)
}

/// UC: B's take answers A's offer (no response could carry the echo), and losses are
/// rebuilt before B's responder sees them, so whole WRITEs arrive where without FEC they
/// break off. A peer without FEC gets offers and no repair; a device without FEC offers
/// nothing and takes nothing.
#[test]
fn uc_takes_the_offer_in_a_take_and_rebuilds_losses() {
    let (mut broken_with, mut broken_without, mut rebuilt) = (0, 0, 0);
    for seed in 1..=6u64 {
        let link = Link {
            loss_ppm: 10_000,
            seed: seed * 7919,
            ..Link::CLEAN
        };
        let (whole, n) = uc_writes(link, fec(), fec());
        let (a, b) = (n.a.fec.as_ref().unwrap(), n.b.fec.as_ref().unwrap());
        assert!(
            a.repairs_sent > 100,
            "seed {seed}: {} repairs",
            a.repairs_sent
        );
        assert!(b.takes_sent >= 1 && b.rebuilt_bad == 0, "seed {seed}");
        rebuilt += b.rebuilt;
        broken_with += 120 - whole;
        broken_without += 120 - uc_writes(link, None, None).0;
    }
    assert!(rebuilt > 20, "{rebuilt} rebuilt");
    assert!(
        broken_with * 4 <= broken_without && broken_without > 10,
        "{broken_with} WRITEs broke off with FEC, {broken_without} without"
    );
    // Lossless, B without FEC: offers unanswered, no repair, every WRITE whole.
    let (whole, n) = uc_writes(Link::CLEAN, fec(), None);
    assert!(!n.a.req.fec_on() && whole == 120);
    assert_eq!(n.a.fec.as_ref().unwrap().repairs_sent, 0);
    // A without FEC: nothing offered, so B takes nothing.
    let (whole, n) = uc_writes(Link::CLEAN, None, fec());
    assert_eq!((whole, n.b.fec.as_ref().unwrap().takes_sent), (120, 0));
}

/// A take changes nothing unless it answers a UC request sent with the offer: one for a
/// PSN not sent yet is refused, and on RC, where responses answer, any take is.
#[test]
fn a_take_for_a_psn_not_sent_or_on_rc_changes_nothing() {
    for service in [Service::Uc, Service::Rc] {
        let mut n = Net::with_fec(
            service,
            1024,
            Link::CLEAN,
            (Scheme::Gbn, fec()),
            (Scheme::Gbn, None),
        );
        let (cfg, next) = (n.a.cfg, n.a.req.sq_psn());
        for psn in [next, next.add(1000), next.sub(1)] {
            assert!(!n.a.req.on_fec_take(&cfg, psn), "{service:?} {psn:?}");
        }
        let w = wqe(SendOp::Send, SendOpcode::Send, 0x100, 0x10_0000, 4096);
        n.b.rq.push_back(recv_wqe(1, 0x100, 0x10_0000, 8192));
        n.post(true, w).unwrap();
        assert!(n.run(100_000));
        // PSN `next` went out with the offer; B, without FEC, never answered it.
        let taken = n.a.req.on_fec_take(&cfg, next);
        assert_eq!(taken, service == Service::Uc, "{service:?}");
        assert!(
            !n.a.req.on_fec_take(&cfg, next.add(4)),
            "{service:?}: not sent"
        );
    }
}

/// The requester's ask for the responses' parameters is taken only for the next epoch and
/// a PSN inside a READ the responder keeps: one for a PSN past ePSN or far ahead, for
/// another epoch, or repeated once taken changes nothing, nor does any to a responder
/// without FEC.
#[test]
fn a_response_ask_is_taken_only_for_a_response_the_responder_owes() {
    let (_, mut n) = reads_fec(Link::CLEAN, Scheme::Gbn, fec());
    let epsn = n.b.resp.epsn();
    // The last READ (16 packets) ends just before ePSN.
    for (epoch, psn) in [
        (1, epsn),
        (1, epsn.add(1000)),
        (2, epsn.sub(1)),
        (0, epsn.sub(1)),
    ] {
        assert!(
            !n.b.resp.on_fec_resp_ask(epoch, psn),
            "epoch {epoch} {psn:?}"
        );
    }
    assert!(n.b.resp.on_fec_resp_ask(1, epsn.sub(16)));
    assert!(!n.b.resp.on_fec_resp_ask(1, epsn.sub(1)), "taken already");
    assert!(n.b.resp.on_fec_resp_ask(2, epsn.sub(1)));
    let (_, mut n) = reads_fec(Link::CLEAN, Scheme::Gbn, None);
    let epsn = n.b.resp.epsn();
    assert!(!n.b.resp.on_fec_resp_ask(1, epsn.sub(1)), "no FEC");
}
