-- SPDX-License-Identifier: GPL-2.0
-- Wireshark dissector for rxe_sr's selective-retransmission (SR) wire format
-- (rxe_sr/proto/wire/sr_ext.rs, rxe_sr/proto/wire/caps.rs).
--
--   tshark -X lua_script:tools/wireshark/rxe_sr.lua -r capture.pcap
--
-- It takes UDP port 4791 (RoCEv2). A packet with BTH TVer 0 is standard RoCEv2: it goes to
-- Wireshark's own InfiniBand dissector, and a capability probe or echo in BTH Resv7 is
-- shown as an "rxe_sr" tree of its own. A packet with BTH TVer 1 is dissected here: the
-- BTH, rxe_sr's MSN-ETH and SR-ACK-ETH (SR wire version 4: with the sender's window and the
-- GAP kind), the
-- IBTA extension headers the opcode carries (with a RETH on every RDMA WRITE packet), the
-- payload and the ICRC.

local p = Proto("rxe_sr", "rxe_sr selective-retransmission RoCEv2")

-- Bit operations that work with the Lua of any Wireshark (5.1 to 5.4).
local band = (bit32 and bit32.band) or (bit and bit.band)
local rshift = (bit32 and bit32.rshift) or (bit and bit.rshift)

local schemes = { [1] = "FaSR", [2] = "SRNIC", [3] = "IRN", [4] = "MELO" }
local ack_kinds = { [0] = "ACK", [1] = "SACK", [2] = "FNACK", [3] = "READ-ACK", [4] = "HOLE", [5] = "GAP" }
local opnames = {
  [0x00] = "RC SEND First", [0x01] = "RC SEND Middle", [0x02] = "RC SEND Last",
  [0x03] = "RC SEND Last with Immediate", [0x04] = "RC SEND Only",
  [0x05] = "RC SEND Only with Immediate", [0x06] = "RC RDMA WRITE First",
  [0x07] = "RC RDMA WRITE Middle", [0x08] = "RC RDMA WRITE Last",
  [0x09] = "RC RDMA WRITE Last with Immediate", [0x0a] = "RC RDMA WRITE Only",
  [0x0b] = "RC RDMA WRITE Only with Immediate", [0x0c] = "RC RDMA READ Request",
  [0x0d] = "RC RDMA READ response First", [0x0e] = "RC RDMA READ response Middle",
  [0x0f] = "RC RDMA READ response Last", [0x10] = "RC RDMA READ response Only",
  [0x11] = "RC Acknowledge", [0x12] = "RC ATOMIC Acknowledge", [0x13] = "RC CmpSwap",
  [0x14] = "RC FetchAdd", [0x16] = "RC SEND Last with Invalidate",
  [0x17] = "RC SEND Only with Invalidate", [0x1c] = "RC FLUSH", [0x1d] = "RC ATOMIC WRITE",
}

local f = {
  opcode = ProtoField.uint8("rxe_sr.bth.opcode", "Opcode", base.HEX, opnames),
  se = ProtoField.bool("rxe_sr.bth.se", "Solicited Event", 8, nil, 0x80),
  migreq = ProtoField.bool("rxe_sr.bth.m", "MigReq", 8, nil, 0x40),
  pad = ProtoField.uint8("rxe_sr.bth.pad", "Pad Count", base.DEC, nil, 0x30),
  tver = ProtoField.uint8("rxe_sr.bth.tver", "Header Version (TVer)", base.DEC, nil, 0x0f),
  pkey = ProtoField.uint16("rxe_sr.bth.pkey", "Partition Key", base.HEX),
  destqp = ProtoField.uint24("rxe_sr.bth.destqp", "Destination Queue Pair", base.HEX),
  ackreq = ProtoField.bool("rxe_sr.bth.ackreq", "Acknowledge Request", 8, nil, 0x80),
  resv7 = ProtoField.uint8("rxe_sr.bth.resv7", "Resv7", base.HEX, nil, 0x7f),
  psn = ProtoField.uint24("rxe_sr.bth.psn", "Packet Sequence Number", base.DEC),
  cap = ProtoField.bool("rxe_sr.cap", "SR capability", 8, nil, 0x40),
  cap_scheme = ProtoField.uint8("rxe_sr.cap.scheme", "Scheme", base.DEC, schemes, 0x38),
  cap_version = ProtoField.uint8("rxe_sr.cap.version", "SR wire version", base.DEC, nil, 0x07),
  msn = ProtoField.uint24("rxe_sr.msneth.msn", "MSN", base.DEC),
  offset = ProtoField.uint24("rxe_sr.msneth.offset", "Offset (packets)", base.DEC),
  kind = ProtoField.uint8("rxe_sr.srack.kind", "Kind", base.DEC, ack_kinds, 0xf0),
  overflow = ProtoField.bool("rxe_sr.srack.overflow", "lost-cnt overflow", 8, nil, 0x08),
  lost_cnt = ProtoField.uint8("rxe_sr.srack.lost_cnt", "lost-cnt", base.DEC, nil, 0x07),
  sack_high = ProtoField.uint24("rxe_sr.srack.sack_high", "sack-high", base.DEC),
  window = ProtoField.uint8("rxe_sr.srack.window", "Window (log2 of PSNs)", base.DEC),
  trigger = ProtoField.uint24("rxe_sr.srack.trigger_psn", "Trigger PSN", base.DEC),
  reth_va = ProtoField.uint64("rxe_sr.reth.va", "Virtual Address", base.HEX),
  reth_rkey = ProtoField.uint32("rxe_sr.reth.rkey", "Remote Key", base.HEX),
  reth_len = ProtoField.uint32("rxe_sr.reth.dmalen", "DMA Length", base.DEC),
  aeth_syndrome = ProtoField.uint8("rxe_sr.aeth.syndrome", "Syndrome", base.HEX),
  aeth_msn = ProtoField.uint24("rxe_sr.aeth.msn", "Message Sequence Number", base.DEC),
  atomic_va = ProtoField.uint64("rxe_sr.atomiceth.va", "Virtual Address", base.HEX),
  atomic_rkey = ProtoField.uint32("rxe_sr.atomiceth.rkey", "Remote Key", base.HEX),
  atomic_swap = ProtoField.uint64("rxe_sr.atomiceth.swap_add", "Swap (or Add) Data", base.HEX),
  atomic_cmp = ProtoField.uint64("rxe_sr.atomiceth.compare", "Compare Data", base.HEX),
  atomic_orig = ProtoField.uint64("rxe_sr.atomicacketh.orig", "Original Remote Data", base.HEX),
  imm = ProtoField.uint32("rxe_sr.immdt", "Immediate Data", base.HEX),
  ieth = ProtoField.uint32("rxe_sr.ieth.rkey", "Invalidate R_Key", base.HEX),
  payload = ProtoField.bytes("rxe_sr.payload", "Payload"),
  icrc = ProtoField.uint32("rxe_sr.icrc", "Invariant CRC", base.HEX),
}
p.fields = f

local e_short = ProtoExpert.new("rxe_sr.short", "Packet shorter than its headers",
  expert.group.MALFORMED, expert.severity.ERROR)
local e_resv = ProtoExpert.new("rxe_sr.reserved", "Reserved SR header byte is not zero",
  expert.group.MALFORMED, expert.severity.ERROR)
local e_kind = ProtoExpert.new("rxe_sr.kind", "Unknown SR-ACK-ETH kind",
  expert.group.MALFORMED, expert.severity.ERROR)
local e_window = ProtoExpert.new("rxe_sr.window", "SR-ACK-ETH window out of 9..22",
  expert.group.MALFORMED, expert.severity.ERROR)
local e_op = ProtoExpert.new("rxe_sr.opcode", "Opcode without an SR format (only RC has one)",
  expert.group.MALFORMED, expert.severity.ERROR)
p.experts = { e_short, e_resv, e_kind, e_window, e_op }

-- The headers of an RC opcode in the SR format, in wire order (sr_ext.rs's table).
local function sr_headers(op)
  local h = {}
  local send = op <= 0x05 or op == 0x16 or op == 0x17
  local write = op >= 0x06 and op <= 0x0b
  local imm = op == 0x03 or op == 0x05 or op == 0x09 or op == 0x0b
  if send or op == 0x0c or (op >= 0x0d and op <= 0x10) or (write and imm) then
    h[#h + 1] = "msn"
  end
  if op == 0x11 then h[#h + 1] = "srack" end
  if write or op == 0x0c or op == 0x1c or op == 0x1d then h[#h + 1] = "reth" end
  if op == 0x13 or op == 0x14 then h[#h + 1] = "atomic" end
  if op == 0x0d or op == 0x0f or op == 0x10 or op == 0x11 or op == 0x12 then
    h[#h + 1] = "aeth"
  end
  if op == 0x12 then h[#h + 1] = "atomicack" end
  if imm then h[#h + 1] = "imm" end
  if op == 0x16 or op == 0x17 then h[#h + 1] = "ieth" end
  return h
end

local lens = { msn = 8, srack = 8, reth = 16, atomic = 28, aeth = 4, atomicack = 8, imm = 4, ieth = 4 }
local has_payload = {}
for _, op in ipairs({ 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b,
  0x0d, 0x0e, 0x0f, 0x10, 0x16, 0x17, 0x1d }) do has_payload[op] = true end

local function cap_tree(tree, tvb)
  local v = band(tvb(8, 1):uint(), 0x7f)
  if v == 0 then return end
  local t = tree:add(p, tvb(8, 1), "rxe_sr capability (BTH Resv7)")
  t:add(f.cap, tvb(8, 1))
  t:add(f.cap_scheme, tvb(8, 1))
  t:add(f.cap_version, tvb(8, 1))
end

local function dissect_sr(tvb, pinfo, tree)
  local n = tvb:len()
  local op = tvb(0, 1):uint()
  local t = tree:add(p, tvb(), "rxe_sr SR format (BTH TVer 1)")
  local bth = t:add(tvb(0, 12), "Base Transport Header")
  bth:add(f.opcode, tvb(0, 1))
  bth:add(f.se, tvb(1, 1))
  bth:add(f.migreq, tvb(1, 1))
  bth:add(f.pad, tvb(1, 1))
  bth:add(f.tver, tvb(1, 1))
  bth:add(f.pkey, tvb(2, 2))
  bth:add(f.destqp, tvb(5, 3))
  bth:add(f.ackreq, tvb(8, 1))
  bth:add(f.resv7, tvb(8, 1))
  bth:add(f.psn, tvb(9, 3))
  pinfo.cols.protocol = "rxe_sr"
  local name = opnames[op]
  if name == nil then
    t:add_proto_expert_info(e_op)
    return n
  end
  local info = name .. " PSN=" .. tvb(9, 3):uint()
  local off = 12
  for _, h in ipairs(sr_headers(op)) do
    local l = lens[h]
    if off + l + 4 > n then
      t:add_proto_expert_info(e_short)
      return n
    end
    local b = tvb(off, l)
    if h == "msn" then
      local s = t:add(b, "MSN-ETH")
      if b(0, 1):uint() ~= 0 or b(4, 1):uint() ~= 0 then s:add_proto_expert_info(e_resv) end
      s:add(f.msn, b(1, 3))
      s:add(f.offset, b(5, 3))
      info = info .. " MSN=" .. b(1, 3):uint() .. " off=" .. b(5, 3):uint()
    elseif h == "srack" then
      local s = t:add(b, "SR-ACK-ETH")
      local k = rshift(b(0, 1):uint(), 4)
      s:add(f.kind, b(0, 1))
      if ack_kinds[k] == nil then s:add_proto_expert_info(e_kind) end
      s:add(f.overflow, b(0, 1))
      s:add(f.lost_cnt, b(0, 1))
      s:add(f.sack_high, b(1, 3))
      -- Since SR wire version 3: the sender's SR window, 2^9 to 2^22 PSNs.
      local w = b(4, 1):uint()
      s:add(f.window, b(4, 1))
      if w < 9 or w > 22 then s:add_proto_expert_info(e_window) end
      s:add(f.trigger, b(5, 3))
      info = info .. " " .. (ack_kinds[k] or "?") .. " trigger=" .. b(5, 3):uint()
    elseif h == "reth" then
      local s = t:add(b, "RDMA Extended Transport Header")
      s:add(f.reth_va, b(0, 8))
      s:add(f.reth_rkey, b(8, 4))
      s:add(f.reth_len, b(12, 4))
    elseif h == "atomic" then
      local s = t:add(b, "Atomic Extended Transport Header")
      s:add(f.atomic_va, b(0, 8))
      s:add(f.atomic_rkey, b(8, 4))
      s:add(f.atomic_swap, b(12, 8))
      s:add(f.atomic_cmp, b(20, 8))
    elseif h == "aeth" then
      local s = t:add(b, "ACK Extended Transport Header")
      s:add(f.aeth_syndrome, b(0, 1))
      s:add(f.aeth_msn, b(1, 3))
    elseif h == "atomicack" then
      t:add(f.atomic_orig, b)
    elseif h == "imm" then
      t:add(f.imm, b)
    elseif h == "ieth" then
      t:add(f.ieth, b)
    end
    off = off + l
  end
  local pad = band(rshift(tvb(1, 1):uint(), 4), 3)
  local plen = n - off - 4 - pad
  if plen < 0 or (plen > 0 and not has_payload[op]) then
    t:add_proto_expert_info(e_short)
    return n
  end
  if plen > 0 then t:add(f.payload, tvb(off, plen)) end
  t:add(f.icrc, tvb(n - 4, 4))
  pinfo.cols.info = info
  return n
end

local ib = DissectorTable.get("udp.port"):get_dissector(4791)

function p.dissector(tvb, pinfo, tree)
  if tvb:len() < 12 + 4 then
    if ib then return ib:call(tvb, pinfo, tree) end
    return 0
  end
  if band(tvb(1, 1):uint(), 0x0f) == 1 then
    return dissect_sr(tvb, pinfo, tree)
  end
  local r = 0
  if ib then r = ib:call(tvb, pinfo, tree) end
  cap_tree(tree, tvb)
  return r
end

DissectorTable.get("udp.port"):add(4791, p)
