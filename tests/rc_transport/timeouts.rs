// SPDX-License-Identifier: GPL-2.0
//! The retransmission timer: the round trip it measures, its backoff and ceiling, and timeouts
//! that race an acknowledgment or the switch to the SR format.

use super::*;
use rxe_sr::proto::wire::caps::RequesterState;

#[test]
fn retransmission_timeout_follows_a_slow_responder() {
    // A responder whose answers take 20 ms (a long receive backlog) with a 1 ms local ACK
    // timeout: after the first samples the requester waits for the measured round trip
    // instead of resending every millisecond.
    let mut n = Net::new(Service::Rc, 1024, Link::CLEAN);
    n.b.rq
        .extend((0..20).map(|i| recv_wqe(i, 0x100, 0x10_0000, 4096)));
    let mut resent_late = 0;
    for i in 0..20u64 {
        n.post(
            true,
            wqe(SendOp::Send, SendOpcode::Send, 0x100, 0x10_0000, 1000),
        )
        .unwrap();
        let mut out = vec![];
        let t0 = i * 100_000;
        let _ = n.a.with_env(t0, &mut out, |r, _, c, e| r.run(e, c));
        assert_eq!(out.len(), 1);
        let p = PacketRepr::parse(&out[0]).unwrap();
        let mut back = vec![];
        let _ =
            n.b.with_env(t0 + 20_000, &mut back, |_, r, c, e| r.on_request(e, c, &p));
        // Before the ACK lands, the requester's timer: due before 20 ms only while it has
        // no estimate yet.
        let d = n.a.req.deadline().unwrap();
        if i >= 3 {
            assert!(d > t0 + 20_000, "message {i}: RTO due at +{} us", d - t0);
        } else if d <= t0 + 20_000 {
            resent_late += 1;
        }
        let ack = PacketRepr::parse(&back[0]).unwrap();
        let mut out = vec![];
        let _ = n.a.with_env(t0 + 20_000, &mut out, |r, _, c, e| {
            r.on_response(e, c, &ack)
        });
    }
    assert_eq!(resent_late, 1, "only the first message had no estimate");
    assert_eq!(n.a.send_cqes.len(), 20);
    let (srtt, _) = n.a.req.rtt_us();
    assert!((19_000..=21_000).contains(&srtt), "srtt {srtt}");
}

#[test]
fn a_long_measured_round_trip_is_not_doubled_past_the_ceiling() {
    // A responder 100 ms behind, a 1 ms local ACK timeout: the measured round trip sets the
    // timer's base (srtt + 4 rttvar, about 100 ms). A message then lost for good times out
    // again and again. Doubling that base per timeout would make the sixth wait 64 times
    // the base, seconds with nothing sent. The wait stays at the larger of the base and the
    // QP's timeout doubled six times (64 ms).
    let mut n = Net::new(Service::Rc, 1024, Link::CLEAN);
    n.b.rq
        .extend((0..11).map(|i| recv_wqe(i, 0x100, 0x10_0000, 4096)));
    let send = || wqe(SendOp::Send, SendOpcode::Send, 0x100, 0x10_0000, 1000);
    for i in 0..10u64 {
        n.post(true, send()).unwrap();
        let t0 = i * 200_000;
        let mut out = vec![];
        let _ = n.a.with_env(t0, &mut out, |r, _, c, e| r.run(e, c));
        assert_eq!(out.len(), 1);
        let p = PacketRepr::parse(&out[0]).unwrap();
        let mut back = vec![];
        let _ =
            n.b.with_env(t0 + 100_000, &mut back, |_, r, c, e| r.on_request(e, c, &p));
        let ack = PacketRepr::parse(&back[0]).unwrap();
        let _ = n.a.with_env(t0 + 100_000, &mut vec![], |r, _, c, e| {
            r.on_response(e, c, &ack)
        });
    }
    assert_eq!(n.a.send_cqes.len(), 10);
    let (srtt, var) = n.a.req.rtt_us();
    let base = srtt + 4 * var;
    assert!(base >= 100_000, "base {base} us");
    n.post(true, send()).unwrap();
    let mut now = 2_000_000;
    let mut lost = vec![];
    let _ = n.a.with_env(now, &mut lost, |r, _, c, e| r.run(e, c));
    assert_eq!(lost.len(), 1);
    let ceiling = base.max(1000 << 6);
    for k in 0..6 {
        let due = n.a.req.deadline().unwrap();
        assert!(
            due - now <= ceiling,
            "wait {k}: {} us, past {ceiling} us",
            due - now
        );
        now = due;
        let mut resent = vec![];
        let _ =
            n.a.with_env(now, &mut resent, |r, _, c, e| r.on_timer(e, c));
        assert_eq!(resent.len(), 1, "timeout {k} resent the message");
    }
    assert_eq!(n.a.req.counters.timeouts, 6);
}

#[test]
fn a_backed_off_timeout_stands_until_a_round_trip_is_measured() {
    // Karn's rule for the backoff. A responder 50 ms behind (a receive backlog), a 1 ms local
    // ACK timeout: the first message times out again and again, each timeout doubling the
    // next, before its ACK lands. That ACK is of a resent packet and measures nothing, so
    // the doubled timeout must stand for the next message (before, it fell back to 1 ms,
    // and on a backlogged device every QP resent its window again into the backlog). The
    // next ACK, of a packet sent once, measures the round trip and ends the backoff.
    let mut n = Net::new(Service::Rc, 1024, Link::CLEAN);
    n.b.rq
        .extend((0..3).map(|i| recv_wqe(i, 0x100, 0x10_0000, 4096)));
    let send = || wqe(SendOp::Send, SendOpcode::Send, 0x100, 0x10_0000, 1000);
    let answer = |n: &mut Net, pkt: &[u8], at: u64| {
        let p = PacketRepr::parse(pkt).unwrap();
        let mut back = vec![];
        let _ =
            n.b.with_env(at, &mut back, |_, r, c, e| r.on_request(e, c, &p));
        let ack = PacketRepr::parse(&back[0]).unwrap();
        let _ =
            n.a.with_env(at, &mut vec![], |r, _, c, e| r.on_response(e, c, &ack));
    };
    n.post(true, send()).unwrap();
    let mut first = vec![];
    let _ = n.a.with_env(0, &mut first, |r, _, c, e| r.run(e, c));
    assert_eq!(first.len(), 1);
    let mut timeouts = 0u32;
    while let Some(due) = n.a.req.deadline().filter(|&d| d < 50_000) {
        let _ =
            n.a.with_env(due, &mut vec![], |r, _, c, e| r.on_timer(e, c));
        timeouts += 1;
    }
    assert_eq!(timeouts, 5, "timeouts at 1, 3, 7, 15 and 31 ms");
    answer(&mut n, &first[0], 50_000);
    assert_eq!(n.a.send_cqes.len(), 1);
    assert_eq!(
        n.a.req.rtt_us(),
        (0, 0),
        "an ACK of a resent packet is no sample"
    );

    n.post(true, send()).unwrap();
    let mut second = vec![];
    let _ = n.a.with_env(50_000, &mut second, |r, _, c, e| r.run(e, c));
    let rto = n.a.req.deadline().unwrap() - 50_000;
    assert_eq!(rto, 1000 << timeouts, "the doubled timeout stands");
    answer(&mut n, &second[0], 70_000);
    assert_eq!(n.a.send_cqes.len(), 2);
    let (srtt, var) = n.a.req.rtt_us();
    assert_eq!(srtt, 20_000);

    n.post(true, send()).unwrap();
    let _ = n.a.with_env(70_000, &mut vec![], |r, _, c, e| r.run(e, c));
    let rto = n.a.req.deadline().unwrap() - 70_000;
    assert_eq!(rto, srtt + 4 * var, "the sample ended the backoff");
}

#[test]
fn the_resend_a_sequence_nak_asked_for_measures_the_round_trip() {
    // Go-back-N at loss: a timeout doubles the next one, and the go-backs of sequence-error
    // NAKs resend what would have been the next sample, so with Karn's rule alone the
    // doubled timeout stayed for long stretches (every later timeout at least twice the
    // QP's). After such a NAK the responder has dropped every copy from the PSN it names,
    // so the resend of that PSN is the only one an ACK can answer: its round trip is a
    // sample, which ends the backoff.
    let mut n = Net::new(Service::Rc, 1024, Link::CLEAN);
    n.b.rq
        .extend((0..4).map(|i| recv_wqe(i, 0x100, 0x10_0000, 4096)));
    for _ in 0..2 {
        n.post(
            true,
            wqe(SendOp::Send, SendOpcode::Send, 0x100, 0x10_0000, 1000),
        )
        .unwrap();
    }
    let mut first = vec![];
    let _ = n.a.with_env(0, &mut first, |r, _, c, e| r.run(e, c));
    assert_eq!(first.len(), 2);
    // Both copies lost; the timeout resends both: the backoff is 1.
    let due = n.a.req.deadline().unwrap();
    let mut resent = vec![];
    let _ =
        n.a.with_env(due, &mut resent, |r, _, c, e| r.on_timer(e, c));
    assert_eq!((resent.len(), n.a.req.counters.timeouts), (2, 1));
    // The first resend is lost too; the second reaches the responder: a sequence-error NAK.
    let p = PacketRepr::parse(&resent[1]).unwrap();
    let mut nak = vec![];
    let _ =
        n.b.with_env(due + 1000, &mut nak, |_, r, c, e| r.on_request(e, c, &p));
    assert_eq!(nak.len(), 1);
    let nak = PacketRepr::parse(&nak[0]).unwrap();
    let mut again = vec![];
    let t = due + 2000;
    let _ =
        n.a.with_env(t, &mut again, |r, _, c, e| r.on_response(e, c, &nak));
    assert_eq!(again.len(), 2, "the NAK's go-back resends both");
    // Its resends are answered 5 ms later: a sample of 5 ms, and the backoff ends.
    let mut acks = vec![];
    for bytes in &again {
        let p = PacketRepr::parse(bytes).unwrap();
        let _ =
            n.b.with_env(t + 5000, &mut acks, |_, r, c, e| r.on_request(e, c, &p));
    }
    for bytes in &acks {
        let ack = PacketRepr::parse(bytes).unwrap();
        let _ = n.a.with_env(t + 5000, &mut vec![], |r, _, c, e| {
            r.on_response(e, c, &ack)
        });
    }
    assert_eq!(n.a.send_cqes.len(), 2);
    let (srtt, var) = n.a.req.rtt_us();
    assert_eq!(srtt, 5000, "the NAK's resend was measured");
    n.post(
        true,
        wqe(SendOp::Send, SendOpcode::Send, 0x100, 0x10_0000, 1000),
    )
    .unwrap();
    let _ =
        n.a.with_env(t + 5000, &mut vec![], |r, _, c, e| r.run(e, c));
    let rto = n.a.req.deadline().unwrap() - (t + 5000);
    assert_eq!(rto, srtt + 4 * var, "the sample ended the backoff");
}

#[test]
fn an_ack_that_arrives_while_a_timeout_resend_waits_retires_the_requests() {
    // A timeout goes back while the ACK is still on its way (a spurious timeout), and the
    // egress queue refuses the first resend, so the cursor waits behind the requests when
    // the ACK of both lands (as it does when the timeout's resends stop at the window's
    // edge: the requests past it are acknowledged with the rest). They must complete then:
    // before, retiring waited for the cursor to pass them again, and once it had, the ACKs
    // of the resends (duplicates) moved UNACK no further, so nothing retired them and the
    // QP waited forever.
    for scheme in [Scheme::Gbn, Scheme::Fasr] {
        let mut n = Net::with_schemes(Service::Rc, 1024, Link::CLEAN, scheme, scheme);
        for i in 0..2u64 {
            let op = SendOp::RdmaWrite {
                remote: Remote {
                    addr: 0x20_0000 + i * 1000,
                    rkey: 0x200,
                },
            };
            n.post(
                true,
                wqe(op, SendOpcode::RdmaWrite, 0x100, 0x10_0000 + i * 1000, 1000),
            )
            .unwrap();
        }
        let mut out = vec![];
        let _ = n.a.with_env(0, &mut out, |r, _, c, e| r.run(e, c));
        assert_eq!(out.len(), 2, "{scheme:?}");
        let mut acks = vec![];
        for bytes in &out {
            let p = PacketRepr::parse(bytes).unwrap();
            let _ =
                n.b.with_env(10, &mut acks, |_, r, c, e| r.on_request(e, c, &p));
        }
        assert!(!acks.is_empty(), "{scheme:?}: no ACK");
        // The timeout, with every request refused by the egress queue meanwhile.
        let due = n.a.req.deadline().expect("the retransmission timer");
        BUSY_EVERY.set(1);
        let mut resent = vec![];
        let _ =
            n.a.with_env(due, &mut resent, |r, _, c, e| r.on_timer(e, c));
        BUSY_EVERY.set(0);
        assert!(
            resent.is_empty() && n.a.req.counters.timeouts == 1,
            "{scheme:?}"
        );
        for bytes in &acks {
            let ack = PacketRepr::parse(bytes).unwrap();
            let mut none = vec![];
            let _ =
                n.a.with_env(due + 1, &mut none, |r, _, c, e| r.on_response(e, c, &ack));
        }
        assert_eq!(
            n.a.send_cqes.len(),
            2,
            "{scheme:?}: the acknowledged WRITEs did not complete"
        );
        n.now = due + 1;
        assert!(n.run(100_000), "{scheme:?}: stalled");
        assert!(n.a.send_cqes.iter().all(|c| c.status == WcStatus::Success));
    }
}

#[test]
fn the_switch_to_the_sr_format_leaves_no_stale_timer() {
    // The go-back-N engine armed the retransmission timer for the probing requests; the
    // scheme's engine takes it over at the switch and disarms it once all is acknowledged
    // (a timer left armed fires on an idle QP, counting a timeout and doubling the next one).
    for scheme in SR_SCHEMES {
        let mut n = Net::with_schemes(Service::Rc, 1024, Link::CLEAN, scheme, scheme);
        // One 8-packet WRITE: the echo comes with the first packets' acknowledgment.
        let len = 8192usize;
        n.a.mem.region(0x100)[..len].copy_from_slice(&pattern(3, len));
        let op = SendOp::RdmaWrite {
            remote: Remote {
                addr: 0x20_0000,
                rkey: 0x200,
            },
        };
        n.post(
            true,
            wqe(op, SendOpcode::RdmaWrite, 0x100, 0x10_0000, len as u32),
        )
        .unwrap();
        assert!(n.run(100_000));
        assert!(n
            .a
            .req
            .sr()
            .is_some_and(|s| matches!(s.state(), RequesterState::Sr(_))));
        assert_eq!(n.a.req.counters.timeouts, 0, "{scheme:?}");
    }
}
