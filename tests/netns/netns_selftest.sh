#!/bin/bash
# netns_run.sh's own behaviour (tests/netns): what each host's ranks see, the exit status
# of a failed host, clean-up after failure, SIGTERM and --timeout, --capture, bad usage
# and the skip without root. Args: netns_run.sh weftrun init_expect.
set -u
netns_run=$1 weftrun=$2 init_expect=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

nr() { bash "$netns_run" --weftrun "$weftrun" "$@"; }

# The run id (wtPID) that netns_run printed to the file given.
run_id() { grep -o 'netns_run: [0-9]* hosts.* \(wt[0-9]*\)n0=' "$1" | grep -o 'wt[0-9]*n0' | sed 's/n0$//'; }

# Nothing of run $1 is left: no namespace, no interface in this namespace.
check_gone() {
	local id=$1 what=$2
	[ -n "$id" ] || { fail "$what: no run id in the output"; return; }
	ip netns list | grep -q "^$id" && fail "$what: namespaces of $id are left: $(ip netns list | grep "^$id")"
	ip -o link show | grep -q ": $id" && fail "$what: interfaces of $id are left in the root namespace"
}

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root for network namespaces"; exit 77; }

echo "== what the ranks see (2 hosts x 2 ranks, --mtu 4000, --env placeholders)"
nr -N 2 -n 2 --mtu 4000 -e 'X=v-{iface}-{ip}-{node}' -e 'Y=plain' -- bash -c '
	echo "see $RANK $WEFT_NETNS_NODE $WEFT_NETNS_NODES $WEFT_NETNS_IFACE $WEFT_NETNS_IP" \
		"$WEFT_NETNS_NAME $X $Y $GROUP_RANK $MASTER_ADDR" \
		"$(cat /sys/class/net/$WEFT_NETNS_IFACE/mtu) $(readlink /proc/self/ns/net)" \
		"$(ip -o -4 addr show dev $WEFT_NETNS_IFACE | awk "{print \$4}")"' >"$tmp/see" 2>&1
rc=$?
cat "$tmp/see"
[ $rc -ne 77 ] || exit 77
[ $rc -eq 0 ] || fail "the job exited $rc"
root_ns=$(readlink /proc/self/ns/net)
declare -A ns_of
for r in 0 1 2 3; do
	node=$((r / 2))
	read -r _ _ rank n nn ifc ip name x y grp maddr mtu netns cidr < <(grep "^\[$r\] see " "$tmp/see")
	[ "${rank-}" = "$r" ] || { fail "rank $r printed nothing"; continue; }
	[ "$n" = "$node" ] && [ "$nn" = 2 ] && [ "$grp" = "$node" ] ||
		fail "rank $r: node '$n' of '$nn' (GROUP_RANK '$grp'), want $node of 2"
	[[ $ifc =~ ^wt[0-9]+v$node$ ]] && [ ${#ifc} -le 15 ] || fail "rank $r: interface '$ifc'"
	[[ $ip =~ ^198\.18\.[0-9]+\.$((node + 1))$ ]] || fail "rank $r: address '$ip'"
	[ "$cidr" = "$ip/24" ] || fail "rank $r: interface has '$cidr', WEFT_NETNS_IP '$ip'"
	[ "$maddr" = "${ip%.*}.1" ] || fail "rank $r: MASTER_ADDR '$maddr' is not node 0's"
	[ "$x" = "v-$ifc-$ip-$node" ] && [ "$y" = plain ] || fail "rank $r: --env gave '$x' '$y'"
	[ "$mtu" = 4000 ] || fail "rank $r: MTU $mtu, want 4000"
	[ "$netns" != "$root_ns" ] || fail "rank $r runs in the root namespace"
	[[ $name =~ ^wt[0-9]+n$node$ ]] || fail "rank $r: namespace name '$name'"
	ns_of[$r]=$netns
done
[ "${ns_of[0]-a}" = "${ns_of[1]-b}" ] && [ "${ns_of[2]-c}" = "${ns_of[3]-d}" ] &&
	[ "${ns_of[0]}" != "${ns_of[2]}" ] || fail "namespaces per rank: ${ns_of[*]}"
check_gone "$(run_id "$tmp/see")" "after success"

echo "== a failing host: its status, the others ended, everything removed"
SECONDS=0
nr -N 3 --grace 1 -- bash -c '[ "$WEFT_NETNS_NODE" = 1 ] && exit 3; exec sleep 60' \
	>"$tmp/fail" 2>&1
rc=$?
cat "$tmp/fail"
[ $rc -eq 3 ] || fail "exit status $rc, want 3 (host 1's)"
[ $SECONDS -lt 30 ] || fail "the other hosts were not ended ($SECONDS s)"
check_gone "$(run_id "$tmp/fail")" "after a failure"

echo "== SIGTERM: ranks stopped, everything removed"
# Not through nr(): a function in the background is a subshell, and the signal is for
# netns_run itself.
bash "$netns_run" --weftrun "$weftrun" -N 2 -- bash -c 'echo $$ >"$0/pid.$RANK"; exec sleep 60' \
	"$tmp" >"$tmp/sig" 2>&1 &
pid=$!
for ((t = 0; t < 200; t++)); do
	[ -e "$tmp/pid.0" ] && [ -e "$tmp/pid.1" ] && break
	sleep 0.05
done
id=$(run_id "$tmp/sig")
ip netns list | grep -q "^${id}n1" || fail "SIGTERM: namespaces not there while running"
kill -TERM $pid
wait $pid
rc=$?
cat "$tmp/sig"
[ $rc -eq 143 ] || fail "SIGTERM: exit status $rc, want 143"
for r in 0 1; do
	p=$(cat "$tmp/pid.$r" 2>/dev/null)
	[ -n "$p" ] || { fail "SIGTERM: rank $r never started"; continue; }
	kill -0 "$p" 2>/dev/null && fail "SIGTERM: rank $r (pid $p) still runs"
done
check_gone "$id" "after SIGTERM"

echo "== --timeout"
SECONDS=0
nr -N 2 --timeout 1 -- sleep 60 >"$tmp/to" 2>&1
rc=$?
cat "$tmp/to"
[ $rc -eq 124 ] || fail "--timeout: exit status $rc, want 124"
[ $SECONDS -lt 20 ] || fail "--timeout 1 took $SECONDS s"
check_gone "$(run_id "$tmp/to")" "after --timeout"

echo "== --capture on node 0's veth"
WEFT_LINKS=tcp WEFT_LOG_LEVEL=error nr -N 2 --capture "$tmp/cap.pcap" -- \
	"$init_expect" OK --allreduce >"$tmp/cap" 2>&1
rc=$?
cat "$tmp/cap"
[ $rc -eq 0 ] || fail "--capture: the job exited $rc"
if ! command -v tshark >/dev/null 2>&1; then
	[ -s "$tmp/cap.pcap" ] || fail "--capture: no capture file"
	echo "(tshark is not installed: the capture is not decoded)"
else
	n_tcp=$(tshark -r "$tmp/cap.pcap" -Y 'tcp && ip.src == 198.18.0.0/15 && ip.dst == 198.18.0.0/15' 2>/dev/null | wc -l)
	n_out=$(tshark -r "$tmp/cap.pcap" -Y 'ip && !(ip.src == 198.18.0.0/15 && ip.dst == 198.18.0.0/15)' 2>/dev/null | wc -l)
	n_v6=$(tshark -r "$tmp/cap.pcap" -Y 'ipv6' 2>/dev/null | wc -l)
	echo "capture: $n_tcp tcp frames between the hosts, $n_out outside 198.18.0.0/15, $n_v6 IPv6"
	[ "$n_tcp" -gt 10 ] || fail "--capture: only $n_tcp tcp frames between the hosts"
	[ "$n_out" -eq 0 ] || fail "--capture: $n_out frames with an address outside 198.18.0.0/15"
	[ "$n_v6" -eq 0 ] || fail "--capture: $n_v6 IPv6 frames"
fi
check_gone "$(run_id "$tmp/cap")" "after --capture"

if command -v tshark >/dev/null 2>&1; then
	echo "== --no-icmp-errors: frames to UDP 4791 get no port unreachable"
	nr -N 2 --no-icmp-errors --capture "$tmp/icmp.pcap" -- bash -c '
		if [ "$WEFT_NETNS_NODE" = 1 ]; then
			for i in 1 2 3; do echo x >"/dev/udp/$MASTER_ADDR/4791"; done
		fi
		sleep 0.3' >"$tmp/icmp" 2>&1
	rc=$?
	cat "$tmp/icmp"
	n_udp=$(tshark -r "$tmp/icmp.pcap" -Y 'udp.dstport == 4791' 2>/dev/null | wc -l)
	n_icmp=$(tshark -r "$tmp/icmp.pcap" -Y 'icmp' 2>/dev/null | wc -l)
	echo "capture: $n_udp frames to UDP 4791, $n_icmp ICMP"
	[ $rc -eq 0 ] && [ "$n_udp" -eq 3 ] && [ "$n_icmp" -eq 0 ] ||
		fail "--no-icmp-errors: status $rc, $n_udp frames to 4791 (want 3), $n_icmp ICMP (want 0)"
fi

echo "== bad usage"
for bad in "-N 1 true" "-N 33 true" "-n 0 true" "--mtu 10 true" "-e NOEQUALS true" "--bogus true" ""; do
	# shellcheck disable=SC2086
	nr $bad >"$tmp/bad" 2>&1
	rc=$?
	[ $rc -eq 2 ] || fail "netns_run $bad: exit status $rc, want 2 ($(cat "$tmp/bad"))"
done

echo "== not root: skip"
if command -v setpriv >/dev/null 2>&1; then
	setpriv --reuid=65534 --regid=65534 --clear-groups bash "$netns_run" --weftrun "$weftrun" \
		-- true >"$tmp/user" 2>&1
	rc=$?
	cat "$tmp/user"
	[ $rc -eq 77 ] || fail "as uid 65534: exit status $rc, want 77"
	grep -q "needs root" "$tmp/user" || fail "as uid 65534: no reason given"
else
	echo "(setpriv is not installed: not checked)"
fi

[ $fails -eq 0 ] || { echo "$fails failures"; exit 1; }
echo "netns_run ok"
