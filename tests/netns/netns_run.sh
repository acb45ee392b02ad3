#!/bin/bash
# Runs one weft job across N simulated hosts (tests/netns): N network namespaces joined
# by a veth pair (N = 2) or by a bridge in an extra namespace (N > 2), one
# `weftrun --nnodes N --node-rank i` per namespace; everything is removed afterwards,
# also on failure or signal. Traffic stays in these namespaces (198.18.0.0/15).
set -u

usage() {
	cat <<'EOF'
usage: netns_run.sh [options] [--] PROG [ARGS...]
Runs PROG under weftrun in N network namespaces ("hosts"), one weftrun per namespace.

  -N, --nodes N          namespaces (hosts), 2..32 (default 2); 2 = one veth pair,
                         more = a bridge in its own namespace
  -n, --ranks-per-node K ranks per host, weftrun's -n (default 1)
  -e, --env NAME=VALUE   set in every rank's environment (repeatable); {iface}, {ip}
                         and {node} in VALUE become that host's interface, address and
                         index, e.g. -e WEFT_DPDK_PORT=net_af_packet0,iface={iface}
      --mtu M            MTU of the veth interfaces (default: the kernel's, 1500)
      --capture FILE     record node 0's veth (pcap, with dumpcap, tcpdump or tshark)
      --no-icmp-errors   the hosts' kernels send no ICMP errors: a user-space driver
                         (dpdk on af_packet) takes its UDP 4791 frames off the wire,
                         and the kernel would answer each with "port unreachable"
      --node-setup CMD   run `sh -c CMD` in each namespace after set-up, before the
                         job (with the WEFT_NETNS_* variables set)
      --weftrun PATH     the launcher (default: $WEFTRUN, else weftrun from PATH)
      --port P           rendezvous store port in node 0 (default 29500; every run has
                         its own namespaces, so runs never share a port)
      --timeout S        end the job (SIGTERM, then SIGKILL) after S seconds; exit 124
      --grace S          after one host fails, seconds the others get to end on their
                         own before they are sent SIGTERM (default 10)
  -h, --help             this text

Every rank also gets, besides weftrun's variables:
  WEFT_NETNS_NODE   this host's index, 0..N-1 (= weftrun's GROUP_RANK)
  WEFT_NETNS_NODES  N
  WEFT_NETNS_IFACE  this namespace's veth interface
  WEFT_NETNS_IP     its IPv4 address (198.18.X.(node+1), a /24)
  WEFT_NETNS_NAME   the namespace's name (for `ip netns exec`)
Node 0's address is MASTER_ADDR; WEFT_JOB_TOKEN is fresh per run unless set.
IPv6 is off on these interfaces, so a capture holds only the job's IPv4 and ARP.

Exit status: 0 when every host's weftrun succeeded, else the first failure's status
(124 on --timeout, 128+signal when this script is interrupted); 77 (skip) with a
reason when not root or when network namespaces or veth pairs are unavailable.
EOF
}

nodes=2
per_node=1
mtu=""
capture=""
node_setup=""
no_icmp=0
weftrun=${WEFTRUN:-weftrun}
port=29500
timeout_s=0
grace_s=10
extra_env=()

die_usage() {
	echo "netns_run: $*" >&2
	exit 2
}

is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }

while [ $# -gt 0 ]; do
	case $1 in
	-N | --nodes) nodes=${2-}; shift 2 || die_usage "$1 needs a value" ;;
	-n | --ranks-per-node) per_node=${2-}; shift 2 || die_usage "$1 needs a value" ;;
	-e | --env) extra_env+=("${2-}"); shift 2 || die_usage "$1 needs a value" ;;
	--mtu) mtu=${2-}; shift 2 || die_usage "--mtu needs a value" ;;
	--capture) capture=${2-}; shift 2 || die_usage "--capture needs a value" ;;
	--no-icmp-errors) no_icmp=1; shift ;;
	--node-setup) node_setup=${2-}; shift 2 || die_usage "--node-setup needs a value" ;;
	--weftrun) weftrun=${2-}; shift 2 || die_usage "--weftrun needs a value" ;;
	--port) port=${2-}; shift 2 || die_usage "--port needs a value" ;;
	--timeout) timeout_s=${2-}; shift 2 || die_usage "--timeout needs a value" ;;
	--grace) grace_s=${2-}; shift 2 || die_usage "--grace needs a value" ;;
	-h | --help) usage; exit 0 ;;
	--) shift; break ;;
	-*) die_usage "unknown option $1 (see --help)" ;;
	*) break ;;
	esac
done
[ $# -gt 0 ] || die_usage "no program given (see --help)"
is_uint "$nodes" && [ "$nodes" -ge 2 ] && [ "$nodes" -le 32 ] ||
	die_usage "--nodes '$nodes' is not in 2..32"
is_uint "$per_node" && [ "$per_node" -ge 1 ] && [ "$per_node" -le 256 ] ||
	die_usage "--ranks-per-node '$per_node' is not in 1..256"
[ -z "$mtu" ] || { is_uint "$mtu" && [ "$mtu" -ge 68 ] && [ "$mtu" -le 65535 ]; } ||
	die_usage "--mtu '$mtu' is not in 68..65535"
is_uint "$port" && [ "$port" -ge 1 ] && [ "$port" -le 65535 ] ||
	die_usage "--port '$port' is not in 1..65535"
is_uint "$timeout_s" || die_usage "--timeout '$timeout_s' is not a whole number of seconds"
is_uint "$grace_s" || die_usage "--grace '$grace_s' is not a whole number of seconds"
for kv in ${extra_env[@]+"${extra_env[@]}"}; do
	[[ $kv =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || die_usage "--env '$kv' is not NAME=VALUE"
done
command -v "$weftrun" >/dev/null 2>&1 || die_usage "weftrun '$weftrun' not found"
weftrun=$(command -v "$weftrun")
case $weftrun in /*) ;; *) weftrun=$PWD/$weftrun ;; esac

skip() {
	echo "SKIP: netns_run: $*" >&2
	exit 77
}

[ "$(id -u)" -eq 0 ] || skip "needs root to create network namespaces (running as uid $(id -u))"
command -v ip >/dev/null 2>&1 || skip "the ip command (iproute2) is not installed"
ip netns list >/dev/null 2>&1 || skip "'ip netns' is not available: $(ip netns list 2>&1)"
[ "${BASH_VERSINFO[0]}" -gt 5 ] || { [ "${BASH_VERSINFO[0]}" -eq 5 ] && [ "${BASH_VERSINFO[1]}" -ge 1 ]; } ||
	skip "needs bash 5.1 or later (wait -n -p), this is $BASH_VERSION"

# A run killed with SIGKILL cannot clean up: remove namespaces of earlier runs whose
# script is gone and in which nothing runs any more.
for old in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^wt[0-9]+(n[0-9]+|br)$'); do
	owner=${old#wt}
	owner=${owner%%[nb]*}
	[ "$owner" != $$ ] && kill -0 "$owner" 2>/dev/null && continue
	[ -z "$(ip netns pids "$old" 2>/dev/null)" ] || continue
	ip netns del "$old" 2>/dev/null && echo "netns_run: removed stale namespace $old" >&2
done

# Names unique per run and short: interface names have at most 15 characters
# ("wt" + pid (<= 7 digits) + "v" + node (<= 2 digits) is at most 12).
id=wt$$
ns=()
ifs=()
ips=()
br_ns=""
subnet=198.18.$(($$ % 256))
for ((i = 0; i < nodes; i++)); do
	ns+=("${id}n$i")
	ifs+=("${id}v$i")
	ips+=("$subnet.$((i + 1))")
done

created_ns=()
node_pids=()
node_rc=()
capture_pid=""
watch_pid=""
grace_pid=""
state_dir=$(mktemp -d "${TMPDIR:-/tmp}/netns_run.XXXXXX") || exit 1
cleaned=0

# Stops whatever still runs in our namespaces (by pid: weftrun, its ranks, the capture)
# and deletes the namespaces, which takes their interfaces with them.
cleanup() {
	[ $cleaned -eq 0 ] || return 0
	cleaned=1
	trap '' INT TERM HUP
	for p in $watch_pid $grace_pid; do kill "$p" 2>/dev/null; done
	local live=()
	for p in ${node_pids[@]+"${node_pids[@]}"}; do
		kill -0 "$p" 2>/dev/null && live+=("$p")
	done
	if [ ${#live[@]} -gt 0 ]; then
		kill -TERM "${live[@]}" 2>/dev/null
		for ((t = 0; t < 50; t++)); do
			local any=0
			for p in "${live[@]}"; do kill -0 "$p" 2>/dev/null && any=1; done
			[ $any -eq 1 ] || break
			sleep 0.1
		done
	fi
	stop_capture
	for n in ${created_ns[@]+"${created_ns[@]}"}; do
		for p in $(ip netns pids "$n" 2>/dev/null); do
			kill -KILL "$p" 2>/dev/null
		done
	done
	wait 2>/dev/null
	for n in ${created_ns[@]+"${created_ns[@]}"}; do
		for dev in $(ip -n "$n" -o link show 2>/dev/null | awk -F': ' '{print $2}' |
			sed 's/@.*//' | grep "^$id"); do
			ip -n "$n" link del "$dev" 2>/dev/null
		done
		ip netns del "$n" 2>/dev/null || echo "netns_run: could not delete namespace $n" >&2
	done
	rm -rf "$state_dir"
}

# The capturer reads the kernel's packet ring in blocks that it hands over on a timer; it
# drops a block still open when it stops, so the last frames need a moment to reach it.
stop_capture() {
	[ -n "$capture_pid" ] || return 0
	sleep "${1:-0}"
	kill -INT "$capture_pid" 2>/dev/null
	for ((t = 0; t < 50; t++)); do
		kill -0 "$capture_pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$capture_pid" 2>/dev/null
	wait "$capture_pid" 2>/dev/null
	capture_pid=""
}

on_signal() {
	echo "netns_run: $1: stopping the job and removing the namespaces" >&2
	cleanup
	exit $((128 + $2))
}
trap cleanup EXIT
trap 'on_signal SIGINT 2' INT
trap 'on_signal SIGTERM 15' TERM
trap 'on_signal SIGHUP 1' HUP

run() {
	local out
	out=$("$@" 2>&1) || {
		echo "netns_run: '$*' failed: $out" >&2
		return 1
	}
}

add_ns() {
	local out
	out=$(ip netns add "$1" 2>&1) || skip "cannot create network namespace $1: $out"
	created_ns+=("$1")
	# No IPv6 on the test links: no router or neighbour solicitations in a capture.
	ip netns exec "$1" sh -c 'for f in all default; do
		echo 1 >/proc/sys/net/ipv6/conf/$f/disable_ipv6; done' 2>/dev/null
	run ip -n "$1" link set lo up || exit 1
}

# veth pair a (in namespace na) <-> b (in nb), both created in place: nothing appears in
# the root namespace, not even for a moment.
add_veth() {
	local out
	out=$(ip link add "$1" netns "$2" type veth peer name "$3" netns "$4" 2>&1) ||
		skip "cannot create a veth pair ($1 in $2, $3 in $4): $out"
	if [ -n "$mtu" ]; then
		run ip -n "$2" link set "$1" mtu "$mtu" || exit 1
		run ip -n "$4" link set "$3" mtu "$mtu" || exit 1
	fi
}

for ((i = 0; i < nodes; i++)); do
	add_ns "${ns[i]}"
	# Per namespace: a rate of 0 suppresses every ICMP error (echo replies still go).
	if [ $no_icmp -eq 1 ]; then
		run ip netns exec "${ns[i]}" sh -c 'echo 0 >/proc/sys/net/ipv4/icmp_msgs_per_sec &&
			echo 0 >/proc/sys/net/ipv4/icmp_msgs_burst' || exit 1
	fi
done
if [ "$nodes" -eq 2 ]; then
	add_veth "${ifs[0]}" "${ns[0]}" "${ifs[1]}" "${ns[1]}"
else
	br_ns=${id}br
	add_ns "$br_ns"
	out=$(ip -n "$br_ns" link add "${id}br" type bridge 2>&1) ||
		skip "cannot create a bridge: $out"
	for ((i = 0; i < nodes; i++)); do
		add_veth "${ifs[i]}" "${ns[i]}" "${id}p$i" "$br_ns"
		run ip -n "$br_ns" link set "${id}p$i" master "${id}br" || exit 1
		run ip -n "$br_ns" link set "${id}p$i" up || exit 1
	done
	# Forward at once: no STP listening/learning delay.
	run ip -n "$br_ns" link set "${id}br" type bridge stp_state 0 forward_delay 0 || exit 1
	run ip -n "$br_ns" link set "${id}br" up || exit 1
fi
for ((i = 0; i < nodes; i++)); do
	run ip -n "${ns[i]}" addr add "${ips[i]}/24" dev "${ifs[i]}" || exit 1
	run ip -n "${ns[i]}" link set "${ifs[i]}" up || exit 1
done

# The environment of node i: ours, WEFT_NETNS_*, then --env with placeholders filled.
node_env() {
	local i=$1 kv
	printf '%s\0' "WEFT_NETNS_NODE=$i" "WEFT_NETNS_NODES=$nodes" \
		"WEFT_NETNS_IFACE=${ifs[i]}" "WEFT_NETNS_IP=${ips[i]}" "WEFT_NETNS_NAME=${ns[i]}"
	for kv in ${extra_env[@]+"${extra_env[@]}"}; do
		kv=${kv//\{iface\}/${ifs[i]}}
		kv=${kv//\{ip\}/${ips[i]}}
		kv=${kv//\{node\}/$i}
		printf '%s\0' "$kv"
	done
}

# Wait until every veth reports carrier (the peer end is up too).
for ((i = 0; i < nodes; i++)); do
	for ((t = 0; t < 100; t++)); do
		[ "$(ip netns exec "${ns[i]}" cat "/sys/class/net/${ifs[i]}/carrier" 2>/dev/null)" = 1 ] &&
			break
		sleep 0.05
	done
done

if [ -n "$node_setup" ]; then
	for ((i = 0; i < nodes; i++)); do
		mapfile -d '' envs < <(node_env "$i")
		ip netns exec "${ns[i]}" env "${envs[@]}" sh -c "$node_setup" || {
			rc=$?
			echo "netns_run: --node-setup failed in ${ns[i]} (status $rc)" >&2
			exit $rc
		}
	done
fi

if [ -n "$capture" ]; then
	: >"$capture" || die_usage "cannot write the capture file $capture"
	rm -f "$capture"
	if command -v dumpcap >/dev/null 2>&1; then
		cap=(dumpcap -q -P -i "${ifs[0]}" -w "$capture")
	elif command -v tcpdump >/dev/null 2>&1; then
		cap=(tcpdump -q -U -s 0 -i "${ifs[0]}" -w "$capture")
	elif command -v tshark >/dev/null 2>&1; then
		cap=(tshark -q -F pcap -i "${ifs[0]}" -w "$capture")
	else
		skip "--capture needs dumpcap, tcpdump or tshark, and none is installed"
	fi
	ip netns exec "${ns[0]}" "${cap[@]}" 2>"$state_dir/capture.err" &
	capture_pid=$!
	# All three say so on stderr once packets are being taken from the interface.
	for ((t = 0; t < 200; t++)); do
		grep -Eqi 'capturing on|listening on' "$state_dir/capture.err" 2>/dev/null && break
		kill -0 "$capture_pid" 2>/dev/null || break
		sleep 0.05
	done
	if ! grep -Eqi 'capturing on|listening on' "$state_dir/capture.err"; then
		echo "netns_run: ${cap[0]} did not start: $(cat "$state_dir/capture.err")" >&2
		exit 1
	fi
	sleep 0.5
fi

[ -n "${WEFT_JOB_TOKEN:-}" ] || export WEFT_JOB_TOKEN="netns-$id-$RANDOM$RANDOM$RANDOM"
desc="netns_run: $nodes hosts x $per_node ranks:"
for ((i = 0; i < nodes; i++)); do desc+=" ${ns[i]}=${ips[i]}(${ifs[i]})"; done
[ -z "$br_ns" ] || desc+=" bridge ${id}br in $br_ns"
echo "$desc" >&2

for ((i = 0; i < nodes; i++)); do
	mapfile -d '' envs < <(node_env "$i")
	ip netns exec "${ns[i]}" env "${envs[@]}" "$weftrun" --nnodes "$nodes" --node-rank "$i" \
		--master-addr "${ips[0]}" --master-port "$port" --tag-output -n "$per_node" "$@" &
	node_pids+=($!)
	node_rc+=("")
done

# --timeout: a watchdog marks the run as timed out and ends the hosts' launchers.
if [ "$timeout_s" -gt 0 ]; then
	(
		sleep "$timeout_s" >/dev/null 2>&1
		: >"$state_dir/timed_out"
		echo "netns_run: timed out after $timeout_s s; ending the job" >&2
		kill -TERM "${node_pids[@]}" 2>/dev/null
		sleep 5 >/dev/null 2>&1
		kill -KILL "${node_pids[@]}" 2>/dev/null
	) &
	watch_pid=$!
fi

first_rc=0
pending=("${node_pids[@]}")
while [ ${#pending[@]} -gt 0 ]; do
	done_pid=""
	wait -n -p done_pid "${pending[@]}"
	rc=$?
	[ -n "$done_pid" ] || continue
	still=()
	for p in "${pending[@]}"; do [ "$p" = "$done_pid" ] || still+=("$p"); done
	pending=(${still[@]+"${still[@]}"})
	for ((i = 0; i < nodes; i++)); do
		[ "${node_pids[i]}" = "$done_pid" ] && [ "$rc" -ne 0 ] || continue
		echo "netns_run: host $i (${ns[i]}) exited with status $rc" >&2
		[ "$first_rc" -eq 0 ] || continue
		first_rc=$rc
		[ -e "$state_dir/timed_out" ] && first_rc=124
		# The other hosts get --grace seconds to notice on their own.
		if [ ${#pending[@]} -gt 0 ] && [ -z "$grace_pid" ]; then
			(
				sleep "$grace_s" >/dev/null 2>&1
				echo "netns_run: ending the other hosts" >&2
				kill -TERM "${pending[@]}" 2>/dev/null
			) &
			grace_pid=$!
		fi
	done
done
stop_capture 1
if [ -n "$capture" ]; then
	grep -Ei 'packets (captured|received)' "$state_dir/capture.err" | sed 's/^/netns_run: /' >&2
fi
exit "$first_rc"
