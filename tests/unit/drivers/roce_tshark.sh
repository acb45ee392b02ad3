#!/bin/bash
# tshark decodes frames built by drivers/dpdk/roce.c as genuine RoCEv2 (tests/unit/drivers):
# every opcode weft sends, payloads 0..9000 bytes, every field as built, a good IPv4
# checksum, a good ICRC (checked by roce_icrc.lua: Wireshark itself shows the ICRC but does
# not verify it), nothing malformed, no expert warning or error. Skips (77) without tshark.
# Args: path to roce_pcap, path to roce_icrc.lua.
set -u
helper="$1"
lua="$2"
if ! command -v tshark >/dev/null 2>&1; then
	echo "SKIP: tshark is not installed (Debian: apt-get install tshark)"
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$helper" write "$tmp/roce.pcap" || fail "roce_pcap could not write the capture"

# Heuristic upper-layer dissectors off (roce_heur.sh).
. "$(dirname "$lua")/roce_heur.sh"
roce_heur "$tmp/roce.pcap"
# Lua runs when tshark is started by root only if the installation allows it: make sure
# the ICRC checker is really loaded rather than silently missing.
tshark -n -r "$tmp/roce.pcap" -c 1 -X lua_script:"$lua" -T fields -e roce_icrc.status \
	>"$tmp/probe" 2>"$tmp/probe.err"
if ! grep -qx good "$tmp/probe"; then
	if grep -qi "lua" "$tmp/probe.err"; then
		echo "SKIP: this tshark cannot run the Lua ICRC checker:"
		cat "$tmp/probe.err"
		exit 77
	fi
	cat "$tmp/probe.err"
	fail "roce_icrc.lua did not report a good ICRC on the first frame"
fi

# The checker agrees with real hardware: a CNP captured from a ConnectX-4 Lx.
"$helper" write-hw "$tmp/hw.pcap" || fail "roce_pcap could not write the hardware frame"
status=$(tshark -n -r "$tmp/hw.pcap" -X lua_script:"$lua" -T fields -e infiniband.bth.opcode \
	-e roce_icrc.status 2>/dev/null)
[ "$status" = "$(printf '129\tgood')" ] ||
	fail "the ConnectX-4 Lx CNP decodes as '$status', expected opcode 129 with a good ICRC"

fields=(frame.number frame.protocols ip.checksum.status udp.dstport infiniband.bth.opcode
	infiniband.bth.se infiniband.bth.m infiniband.bth.padcnt infiniband.bth.tver
	infiniband.bth.p_key infiniband.bth.destqp infiniband.bth.a infiniband.bth.psn
	infiniband.reth.va infiniband.reth.r_key infiniband.reth.dmalen
	infiniband.aeth.syndrome infiniband.aeth.msn data.data
	infiniband.invariant.crc roce_icrc.status roce_icrc.computed _ws.malformed
	_ws.expert.severity)
eargs=()
for f in "${fields[@]}"; do eargs+=(-e "$f"); done
tshark -n -r "$tmp/roce.pcap" -X lua_script:"$lua" -o ip.check_checksum:TRUE "${heur[@]}" \
	-T fields -E separator=/t -E occurrence=a "${eargs[@]}" >"$tmp/fields" 2>"$tmp/err" ||
	{ cat "$tmp/err"; fail "tshark failed"; }
"$helper" check <"$tmp/fields" || {
	head -c 2000 "$tmp/fields"
	fail "tshark's decode differs from what was built"
}

# The same capture through a display filter: nothing malformed, nothing without the
# InfiniBand layer, no bad checksum or ICRC, no expert warning or error.
bad=$(tshark -n -r "$tmp/roce.pcap" -X lua_script:"$lua" -o ip.check_checksum:TRUE \
	"${heur[@]}" -Y '_ws.malformed || !infiniband || !(udp.dstport == 4791)
	|| ip.checksum.status != 1 || roce_icrc.status != "good"
	|| _ws.expert.severity >= warning' 2>/dev/null | wc -l)
[ "$bad" -eq 0 ] || fail "$bad frames matched the bad-frame filter"

# And a frame changed after its ICRC was computed is reported bad, so the checker is not
# vacuous: flip one bit of the last frame's AETH (an ACKNOWLEDGE: 58 bytes + ICRC).
size=$(stat -c %s "$tmp/roce.pcap")
off=$((size - 6))
byte=$(od -An -tu1 -j "$off" -N 1 "$tmp/roce.pcap" | tr -d ' ')
printf "\\x$(printf %02x $((byte ^ 1)))" |
	dd of="$tmp/roce.pcap" bs=1 seek="$off" conv=notrunc status=none
status=$(tshark -n -r "$tmp/roce.pcap" -X lua_script:"$lua" "${heur[@]}" -T fields \
	-e roce_icrc.status 2>/dev/null | tail -n 1)
[ "$status" = "bad" ] || fail "a corrupted frame's ICRC was reported '$status', not bad"
echo "tshark $(tshark -v 2>/dev/null | head -n 1 | awk '{print $3}'): RoCEv2 decode ok"
