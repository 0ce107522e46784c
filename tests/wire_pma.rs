// SPDX-License-Identifier: GPL-2.0
//! The PerfMgt agent (proto::wire::pma): the fields the RDMA core's sysfs reads, at the
//! offsets and widths it reads them (drivers/infiniband/core/sysfs.c's PORT_PMA_ATTR and
//! PORT_PMA_ATTR_EXT tables: bit offsets from the attribute's data), in IBTA's units.

use rxe_sr::proto::wire::pma::*;

/// A Get as the core's `get_perf_mad` builds it.
fn get(attr: u16, port: u8) -> [u8; MAD_SIZE] {
    let mut m = [0u8; MAD_SIZE];
    m[0] = 1;
    m[1] = MGMT_CLASS_PERF_MGMT;
    m[2] = 1;
    m[3] = METHOD_GET;
    m[8..16].copy_from_slice(&0x1122_3344_5566_7788u64.to_be_bytes());
    m[16..18].copy_from_slice(&attr.to_be_bytes());
    if attr != ATTR_CLASS_PORT_INFO {
        m[PMA_DATA + 1] = port;
    }
    m
}

/// The field of `width` bits at bit `offset` of the attribute data, as sysfs shows it.
fn field(resp: &[u8; MAD_SIZE], offset: usize, width: usize) -> u64 {
    let at = PMA_DATA + offset / 8;
    match width {
        4 => u64::from((resp[at] >> (4 - (offset % 8))) & 0xf),
        8 => u64::from(resp[at]),
        16 => u64::from(u16::from_be_bytes([resp[at], resp[at + 1]])),
        32 => u64::from(u32::from_be_bytes(resp[at..at + 4].try_into().unwrap())),
        64 => u64::from_be_bytes(resp[at..at + 8].try_into().unwrap()),
        _ => unreachable!(),
    }
}

fn counters() -> PortCounters {
    PortCounters {
        xmit_bytes: 4 * 1000,
        rcv_bytes: 4 * 2000,
        xmit_packets: 30,
        rcv_packets: 40,
        multicast_xmit_packets: 3,
        multicast_rcv_packets: 4,
        rcv_errors: 5,
        xmit_discards: 6,
        link_downed: 7,
    }
}

fn ask(attr: u16, port: u8, c: &PortCounters) -> [u8; MAD_SIZE] {
    let mut resp = [0xaau8; MAD_SIZE];
    assert_eq!(answer(&get(attr, port), 1, c, &mut resp), Answer::Reply);
    assert_eq!(resp[3], METHOD_GET_RESP);
    assert_eq!(&resp[8..16], &0x1122_3344_5566_7788u64.to_be_bytes(), "the TID is echoed");
    resp
}

#[test]
fn class_port_info_announces_the_extended_counters() {
    let r = ask(ATTR_CLASS_PORT_INFO, 0, &counters());
    assert_eq!(status(&r), 0);
    // The core tests cpi.capability_mask & IB_PMA_CLASS_CAP_EXT_WIDTH (bit 9, big endian).
    assert_eq!(u16::from_be_bytes([r[PMA_DATA + 2], r[PMA_DATA + 3]]) & (1 << 9), 1 << 9);
}

#[test]
fn port_counters_at_the_offsets_sysfs_reads() {
    let r = ask(ATTR_PORT_COUNTERS, 1, &counters());
    assert_eq!(status(&r), 0);
    assert_eq!(field(&r, 56, 8), 7, "link_downed");
    assert_eq!(field(&r, 64, 16), 5, "port_rcv_errors");
    assert_eq!(field(&r, 112, 16), 6, "port_xmit_discards");
    assert_eq!(field(&r, 192, 32), 1000, "port_xmit_data, in 4-octet units");
    assert_eq!(field(&r, 224, 32), 2000, "port_rcv_data");
    assert_eq!(field(&r, 256, 32), 30, "port_xmit_packets");
    assert_eq!(field(&r, 288, 32), 40, "port_rcv_packets");
    for (off, w) in [(32, 16), (48, 8), (80, 16), (96, 16), (128, 8), (136, 8), (152, 4), (156, 4), (176, 16), (320, 32)] {
        assert_eq!(field(&r, off, w), 0, "counter at bit {off} is not kept: 0");
    }
    // The rest of the response is zero, not the buffer's old bytes.
    assert!(r[PMA_DATA + 44..].iter().all(|&b| b == 0));
}

#[test]
fn narrow_counters_saturate() {
    let c = PortCounters {
        xmit_bytes: 4 * (u32::MAX as u64) + 400,
        rcv_packets: u64::from(u32::MAX) + 1,
        rcv_errors: 70000,
        link_downed: 300,
        ..PortCounters::default()
    };
    let r = ask(ATTR_PORT_COUNTERS, 1, &c);
    assert_eq!(field(&r, 192, 32), u64::from(u32::MAX));
    assert_eq!(field(&r, 288, 32), u64::from(u32::MAX));
    assert_eq!(field(&r, 64, 16), 0xffff);
    assert_eq!(field(&r, 56, 8), 0xff);
    let r = ask(ATTR_PORT_COUNTERS_EXT, 1, &c);
    assert_eq!(field(&r, 64, 64), u64::from(u32::MAX) + 100, "the extended set does not saturate");
    assert_eq!(field(&r, 256, 64), u64::from(u32::MAX) + 1);
}

#[test]
fn extended_counters_at_the_offsets_sysfs_reads() {
    let r = ask(ATTR_PORT_COUNTERS_EXT, 1, &counters());
    assert_eq!(status(&r), 0);
    assert_eq!(field(&r, 64, 64), 1000, "port_xmit_data");
    assert_eq!(field(&r, 128, 64), 2000, "port_rcv_data");
    assert_eq!(field(&r, 192, 64), 30, "port_xmit_packets");
    assert_eq!(field(&r, 256, 64), 40, "port_rcv_packets");
    assert_eq!(field(&r, 320, 64), 27, "unicast_xmit_packets");
    assert_eq!(field(&r, 384, 64), 36, "unicast_rcv_packets");
    assert_eq!(field(&r, 448, 64), 3, "multicast_xmit_packets");
    assert_eq!(field(&r, 512, 64), 4, "multicast_rcv_packets");
}

#[test]
fn other_mads_are_left_alone() {
    let c = counters();
    let mut resp = [0u8; MAD_SIZE];
    let mut m = get(ATTR_PORT_COUNTERS, 1);
    m[1] = 0x07; // the CM class
    assert_eq!(answer(&m, 1, &c, &mut resp), Answer::NotPma);
    let mut m = get(ATTR_PORT_COUNTERS, 1);
    m[3] = 0x02; // Set
    assert_eq!(answer(&m, 1, &c, &mut resp), Answer::NotPma);
    let mut m = get(ATTR_PORT_COUNTERS, 1);
    m[0] = 2; // another base version
    assert_eq!(answer(&m, 1, &c, &mut resp), Answer::NotPma);
    assert!(resp.iter().all(|&b| b == 0), "nothing written");
}

#[test]
fn unknown_attributes_and_other_ports_get_the_unsupported_status() {
    let c = counters();
    for (attr, port) in [(0x0013, 1), (ATTR_PORT_COUNTERS, 2), (ATTR_PORT_COUNTERS_EXT, 3)] {
        let mut resp = [0u8; MAD_SIZE];
        assert_eq!(answer(&get(attr, port), 1, &c, &mut resp), Answer::Reply);
        assert_eq!(status(&resp), STATUS_UNSUPPORTED_ATTR, "attr {attr:#x} port {port}");
        assert!(resp[PMA_DATA..].iter().all(|&b| b == 0), "no counters in a refusal");
    }
    // PortSelect 0xFF: all ports, answered.
    let r = ask(ATTR_PORT_COUNTERS, 0xff, &c);
    assert_eq!(status(&r), 0);
    assert_eq!(field(&r, 256, 32), 30);
}
