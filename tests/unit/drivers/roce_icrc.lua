-- RoCEv2 ICRC check for tshark/Wireshark (tests/unit/drivers): Wireshark's InfiniBand
-- dissector shows infiniband.invariant.crc but never verifies it, so this postdissector
-- recomputes it from the captured bytes, independently of weft's code, and reports
--   roce_icrc.status    "good" or "bad" (bad also raises an expert error)
--   roce_icrc.computed  the CRC it expects (as a number; the wire carries it LSB first)
-- Use: tshark -X lua_script:roce_icrc.lua -r capture.pcap -T fields -e roce_icrc.status
--
-- The ICRC (InfiniBand Annex A17, RoCEv2) is CRC-32 (IEEE 802.3, as zlib computes it) over
-- 8 bytes of 0xff for the absent LRH, the IPv4 header with TOS, TTL and header checksum
-- set to 0xff bytes, the UDP header with its checksum set to 0xff bytes, the BTH with its
-- byte 4 (FECN, BECN, reserved) set to 0xff, then everything after the BTH up to the
-- ICRC, which is the last 4 bytes of the IPv4 datagram, stored least significant byte
-- first.

local proto = Proto("roce_icrc", "RoCEv2 ICRC check")
local f_status = ProtoField.string("roce_icrc.status", "ICRC status")
local f_computed = ProtoField.uint32("roce_icrc.computed", "Computed ICRC", base.HEX)
proto.fields = { f_status, f_computed }
local e_bad = ProtoExpert.new("roce_icrc.bad", "RoCEv2 ICRC mismatch",
	expert.group.CHECKSUM, expert.severity.ERROR)
proto.experts = { e_bad }

local fi_ip = Field.new("ip")
local fi_udp = Field.new("udp")
local fi_ib = Field.new("infiniband")
local fi_dport = Field.new("udp.dstport")

local band, bxor, rshift, bnot = bit32.band, bit32.bxor, bit32.rshift, bit32.bnot

local table_ = {}
for i = 0, 255 do
	local c = i
	for _ = 1, 8 do
		if band(c, 1) == 1 then
			c = bxor(rshift(c, 1), 0xedb88320)
		else
			c = rshift(c, 1)
		end
	end
	table_[i] = c
end

local function step(c, byte)
	return bxor(rshift(c, 8), table_[band(bxor(c, byte), 0xff)])
end

function proto.dissector(tvb, pinfo, tree)
	local ib, ip, udp, dport = fi_ib(), fi_ip(), fi_udp(), fi_dport()
	if ib == nil or ip == nil or udp == nil or dport == nil or dport.value ~= 4791 then
		return
	end
	local ip_off = ip.offset
	local ihl = band(tvb(ip_off, 1):uint(), 0x0f) * 4
	local total = tvb(ip_off + 2, 2):uint()
	local udp_off = ip_off + ihl
	local bth_off = udp_off + 8
	local icrc_off = ip_off + total - 4
	if total < ihl + 8 + 12 + 4 or icrc_off + 4 > tvb:len() then
		tree:add(proto, tvb()):add(f_status, "bad"):add_proto_expert_info(e_bad,
			"datagram too short for a BTH and ICRC")
		return
	end
	local c = 0xffffffff
	for _ = 1, 8 do
		c = step(c, 0xff)
	end
	for off = ip_off, icrc_off - 1 do
		local b = tvb(off, 1):uint()
		local r = off - ip_off
		if r == 1 or r == 8 or r == 10 or r == 11 then -- TOS, TTL, header checksum
			b = 0xff
		elseif off == udp_off + 6 or off == udp_off + 7 then -- UDP checksum
			b = 0xff
		elseif off == bth_off + 4 then -- FECN, BECN, reserved
			b = 0xff
		end
		c = step(c, b)
	end
	c = bnot(c)
	local stored = tvb(icrc_off, 4):le_uint()
	local sub = tree:add(proto, tvb(icrc_off, 4))
	sub:add(f_computed, c)
	if stored == c then
		sub:add(f_status, "good")
	else
		sub:add(f_status, "bad"):add_proto_expert_info(e_bad,
			string.format("ICRC 0x%08x on the wire (LSB first), expected 0x%08x", stored, c))
	end
end

register_postdissector(proto)
