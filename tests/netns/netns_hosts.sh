#!/bin/bash
# Ranks in different network namespaces are different hosts (tests/netns): 2 hosts x 2
# ranks, with LOCAL_RANK / LOCAL_WORLD_SIZE removed so weft derives them from the host
# identities. Each rank must be local rank (rank % 2) of 2, the two ranks of a namespace
# share one identity that names the namespace, the pairs inside a host use WEFT_LINKS's
# local driver and the others its remote one; WEFT_HOST_ID still overrides.
# Args: netns_run.sh weftrun init_expect.
set -u
netns_run=$1 weftrun=$2 init_expect=$3
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fails=0

fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

# run LINKS LOCAL REMOTE [WEFT_HOST_ID]: one job; checks the identities and the routes.
run() {
	local links=$1 local_link=$2 remote_link=$3 forced=${4-}
	local r s want lsize lrank host
	local hosts=()

	echo "== WEFT_LINKS=$links${forced:+ WEFT_HOST_ID=$forced}"
	env WEFT_LOG_LEVEL=info WEFT_LINKS="$links" ${forced:+WEFT_HOST_ID=$forced} \
		bash "$netns_run" --weftrun "$weftrun" -N 2 -n 2 --timeout 60 -- \
		env -u LOCAL_RANK -u LOCAL_WORLD_SIZE "$init_expect" OK --allreduce >"$out" 2>&1
	local rc=$?
	grep -v " INFO " "$out"
	[ $rc -ne 77 ] || exit 77
	[ $rc -eq 0 ] || { fail "job exited $rc"; return; }
	for r in 0 1 2 3; do
		if [ -n "$forced" ]; then lrank=$r lsize=4; else lrank=$((r % 2)) lsize=2; fi
		host=$(sed -n "s/.*rank $r is local rank $lrank of $lsize on host \(.*\)$/\1/p" "$out")
		[ -n "$host" ] || fail "rank $r is not local rank $lrank of $lsize: $(grep "rank $r is local" "$out")"
		hosts[r]=$host
		for s in 0 1 2 3; do
			[ "$r" -ne "$s" ] || continue
			want=$remote_link
			[ $((r / 2)) -ne $((s / 2)) ] && [ -z "$forced" ] || want=$local_link
			grep -q "rank $r reaches rank $s over $want\$" "$out" ||
				fail "rank $r does not reach rank $s over $want: $(grep "rank $r reaches rank $s " "$out")"
		done
	done
	if [ -n "$forced" ]; then
		[ "${hosts[0]}" = "id:$forced" ] && [ "${hosts[2]}" = "id:$forced" ] ||
			fail "WEFT_HOST_ID=$forced did not override: '${hosts[0]}', '${hosts[2]}'"
		return
	fi
	[ "${hosts[0]}" = "${hosts[1]}" ] && [ "${hosts[2]}" = "${hosts[3]}" ] ||
		fail "ranks of one namespace have different identities: ${hosts[*]}"
	[ "${hosts[0]}" != "${hosts[2]}" ] || fail "both namespaces are one host: ${hosts[0]}"
	case ${hosts[0]} in *net:\[*\]) ;; *) fail "identity '${hosts[0]}' names no namespace" ;; esac
}

run auto shm tcp
run tcp,udp tcp udp
# Forced into one host: every rank is local (tcp, since shm cannot cross namespaces).
run tcp tcp tcp netns-one-host
[ $fails -eq 0 ] || { echo "$fails failures"; exit 1; }
echo "namespace hosts ok"
