// SPDX-License-Identifier: GPL-2.0
//! The Performance Management Agent's MADs (IBTA Vol. 1 16.1): a PerfMgt Get of
//! ClassPortInfo, PortCounters or PortCountersExtended, answered from a port's counters.
//! The RDMA core reads a port's `counters/` directory in sysfs this way (a Get handed to
//! the driver's `process_mad`), and picks the 64-bit set when ClassPortInfo announces it.
//!
//! Units as IBTA has them: the data counters count octets divided by 4 (a RoCEv2 packet,
//! BTH to ICRC, is a multiple of 4 octets), the packet counters packets; PortCounters'
//! narrower fields stop at their maximum instead of wrapping (IBTA 16.1.3.5).
//! Nothing here panics on any input: the MAD is a fixed-size array, every field is read
//! and written by offset within it.

/// Bytes in a MAD (IBTA 13.4.2).
pub const MAD_SIZE: usize = 256;
/// The PerfMgt management class.
pub const MGMT_CLASS_PERF_MGMT: u8 = 0x04;
/// Get, and its response.
pub const METHOD_GET: u8 = 0x01;
/// GetResp.
pub const METHOD_GET_RESP: u8 = 0x81;
/// ClassPortInfo.
pub const ATTR_CLASS_PORT_INFO: u16 = 0x0001;
/// PortCounters (32-bit data and packet counters, the error counters).
pub const ATTR_PORT_COUNTERS: u16 = 0x0012;
/// PortCountersExtended (64-bit data and packet counters, unicast and multicast).
pub const ATTR_PORT_COUNTERS_EXT: u16 = 0x001D;
/// ClassPortInfo's CapabilityMask bit: PortCountersExtended is supported, all of it.
pub const CAP_EXT_WIDTH: u16 = 1 << 9;
/// MAD status: the method and attribute combination is not supported (IBTA 13.4.7).
pub const STATUS_UNSUPPORTED_ATTR: u16 = 3 << 2;
/// Where the attribute's data begins: after the common MAD header (24 bytes) and the
/// PerfMgt class's 40 reserved bytes.
pub const PMA_DATA: usize = 64;
/// ClassPortInfo's response time value (4.096 us x 2^18, about 1 s), as drivers answer.
const RESP_TIME_VALUE: u32 = 18;

/// A port's counters, as the driver keeps them (octets, not quads).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortCounters {
    /// Octets sent (each RoCEv2 packet's BTH to ICRC).
    pub xmit_bytes: u64,
    /// Octets received.
    pub rcv_bytes: u64,
    /// Packets sent.
    pub xmit_packets: u64,
    /// Packets received.
    pub rcv_packets: u64,
    /// Of the packets sent, to a multicast group.
    pub multicast_xmit_packets: u64,
    /// Of the packets received, to a multicast group.
    pub multicast_rcv_packets: u64,
    /// Packets received with an error (malformed, a bad ICRC).
    pub rcv_errors: u64,
    /// Packets the port discarded instead of sending (its egress queue was full).
    pub xmit_discards: u64,
    /// Times the link went down.
    pub link_downed: u64,
}

/// What [`answer`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Not a PerfMgt Get: left to whoever else handles MADs.
    NotPma,
    /// A response is in `resp`.
    Reply,
}

fn be16_at(b: &[u8; MAD_SIZE], at: usize) -> u16 {
    match b.get(at..at + 2) {
        Some(&[h, l]) => u16::from_be_bytes([h, l]),
        _ => 0,
    }
}

fn put(b: &mut [u8; MAD_SIZE], at: usize, bytes: &[u8]) {
    if let Some(d) = b.get_mut(at..at + bytes.len()) {
        d.copy_from_slice(bytes);
    }
}

/// The response echoes the request's CounterSelect.
fn copy_counter_select(req: &[u8; MAD_SIZE], resp: &mut [u8; MAD_SIZE]) {
    put(
        resp,
        PMA_DATA + 2,
        &be16_at(req, PMA_DATA + 2).to_be_bytes(),
    );
}

fn sat16(v: u64) -> [u8; 2] {
    u16::try_from(v).unwrap_or(u16::MAX).to_be_bytes()
}

fn sat32(v: u64) -> [u8; 4] {
    u32::try_from(v).unwrap_or(u32::MAX).to_be_bytes()
}

fn sat8(v: u64) -> u8 {
    u8::try_from(v).unwrap_or(u8::MAX)
}

/// The attribute ID of a MAD (bytes 16-17 of the common header).
pub fn attr_id(mad: &[u8; MAD_SIZE]) -> u16 {
    be16_at(mad, 16)
}

/// The MAD status (bytes 4-5).
#[cfg_attr(MODULE, expect(dead_code, reason = "the host tests"))]
pub fn status(mad: &[u8; MAD_SIZE]) -> u16 {
    be16_at(mad, 4)
}

/// Answers `req` if it is a PerfMgt Get (base and class version 1) for port `port` (or
/// for all ports, PortSelect 0xFF) with `c`: the response, the request's header with the
/// GetResp method, goes to `resp`. An attribute other than the three here is answered
/// with the "unsupported" status.
pub fn answer(
    req: &[u8; MAD_SIZE],
    port: u8,
    c: &PortCounters,
    resp: &mut [u8; MAD_SIZE],
) -> Answer {
    if req[0] != 1 || req[1] != MGMT_CLASS_PERF_MGMT || req[2] != 1 || req[3] != METHOD_GET {
        return Answer::NotPma;
    }
    *resp = [0; MAD_SIZE];
    resp[..24].copy_from_slice(&req[..24]);
    resp[3] = METHOD_GET_RESP;
    put(resp, 4, &[0, 0]);
    let attr = attr_id(req);
    let port_select = req[PMA_DATA + 1];
    let port_ok = port_select == port || port_select == 0xff;
    match attr {
        ATTR_CLASS_PORT_INFO => {
            resp[PMA_DATA] = 1;
            resp[PMA_DATA + 1] = 1;
            put(resp, PMA_DATA + 2, &CAP_EXT_WIDTH.to_be_bytes());
            put(resp, PMA_DATA + 4, &RESP_TIME_VALUE.to_be_bytes());
        }
        ATTR_PORT_COUNTERS if port_ok => {
            let d = PMA_DATA;
            resp[d + 1] = port_select;
            copy_counter_select(req, resp);
            resp[d + 7] = sat8(c.link_downed);
            put(resp, d + 8, &sat16(c.rcv_errors));
            put(resp, d + 14, &sat16(c.xmit_discards));
            put(resp, d + 24, &sat32(c.xmit_bytes / 4));
            put(resp, d + 28, &sat32(c.rcv_bytes / 4));
            put(resp, d + 32, &sat32(c.xmit_packets));
            put(resp, d + 36, &sat32(c.rcv_packets));
        }
        ATTR_PORT_COUNTERS_EXT if port_ok => {
            let d = PMA_DATA;
            resp[d + 1] = port_select;
            copy_counter_select(req, resp);
            let ucast_x = c.xmit_packets.saturating_sub(c.multicast_xmit_packets);
            let ucast_r = c.rcv_packets.saturating_sub(c.multicast_rcv_packets);
            for (i, v) in [
                c.xmit_bytes / 4,
                c.rcv_bytes / 4,
                c.xmit_packets,
                c.rcv_packets,
                ucast_x,
                ucast_r,
                c.multicast_xmit_packets,
                c.multicast_rcv_packets,
            ]
            .into_iter()
            .enumerate()
            {
                put(resp, d + 8 + 8 * i, &v.to_be_bytes());
            }
        }
        _ => put(resp, 4, &STATUS_UNSUPPORTED_ATTR.to_be_bytes()),
    }
    Answer::Reply
}
