#!/bin/bash
# The dpdk driver's traffic between two namespace hosts, captured on the veth, is genuine
# RoCEv2 (tests/netns): tshark decodes every UDP 4791 frame as InfiniBand with a good IPv4
# checksum and a good ICRC (roce_icrc.lua), nothing malformed, no expert warning; RDMA
# WRITEs carry a RETH, acknowledgements an AETH. Skips (77) without root, tshark or DPDK.
# Args: netns_run.sh weftrun roce_icrc.lua PROG [ARGS...]
set -u
run="$1"; weftrun="$2"; lua="$3"; shift 3
command -v tshark >/dev/null 2>&1 || { echo "SKIP: tshark is not installed"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

WEFT_LINKS=${WEFT_LINKS:-shm,dpdk} bash "$run" --weftrun "$weftrun" --timeout 90 --no-icmp-errors \
	-N 2 -n "${RANKS_PER_HOST:-1}" -e 'WEFT_DPDK_PORT=net_af_packet0,iface={iface}' \
	--capture "$tmp/cap.pcap" -- "$@"
rc=$?
[ $rc -eq 0 ] || { echo "the job between the hosts ended with $rc"; exit $rc; }
[ -s "$tmp/cap.pcap" ] || fail "nothing was captured"

# Heuristic upper-layer dissectors off (roce_heur.sh, beside the ICRC checker).
. "$(dirname "$lua")/roce_heur.sh"
roce_heur "$tmp/cap.pcap"
t() { tshark -n -r "$tmp/cap.pcap" -X lua_script:"$lua" -o ip.check_checksum:TRUE "${heur[@]}" "$@" 2>/dev/null; }

total=$(t -Y 'udp.dstport == 4791' | wc -l)
[ "$total" -ge 100 ] || fail "only $total RoCEv2 frames were captured"
bad=$(t -Y 'udp.dstport == 4791 && (_ws.malformed || !infiniband || ip.checksum.status != 1
	|| roce_icrc.status != "good" || _ws.expert.severity >= warning)' | wc -l)
[ "$bad" -eq 0 ] || {
	t -Y 'udp.dstport == 4791 && (_ws.malformed || roce_icrc.status != "good")' | head -5
	fail "$bad of $total RoCEv2 frames are malformed or have a bad checksum or ICRC"
}
# Every opcode seen is one weft sends; writes and acknowledgements are among them, with
# their extended headers.
t -Y 'infiniband' -T fields -e infiniband.bth.opcode | sort -n | uniq -c >"$tmp/ops"
cat "$tmp/ops"
while read -r _ op; do
	case "$op" in 4 | 6 | 7 | 8 | 10 | 17) ;; *) fail "unexpected BTH opcode $op" ;; esac
done <"$tmp/ops"
reth=$(t -Y 'infiniband.bth.opcode == 6 || infiniband.bth.opcode == 10' -T fields \
	-e infiniband.reth.r_key | grep -c .)
writes=$(t -Y 'infiniband.bth.opcode == 6 || infiniband.bth.opcode == 10' | wc -l)
[ "$writes" -gt 0 ] && [ "$reth" -eq "$writes" ] || fail "$writes RDMA WRITE first/only frames, $reth with a RETH"
aeth=$(t -Y 'infiniband.bth.opcode == 17' -T fields -e infiniband.aeth.msn | grep -c .)
acks=$(t -Y 'infiniband.bth.opcode == 17' | wc -l)
[ "$acks" -gt 0 ] && [ "$aeth" -eq "$acks" ] || fail "$acks acknowledgements, $aeth with an AETH"
echo "tshark: $total RoCEv2 frames, all good ICRC ($writes writes with RETH, $acks acks with AETH)"
