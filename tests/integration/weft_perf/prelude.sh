# Sourced by the weft-perf test scripts (tests/integration/weft_perf): takes CASE WEFTRUN
# WEFT_PERF from the script's arguments, makes a scratch directory removed on exit with
# $out and $err in it, and defines fail(), which shows the first $FAIL_LINES lines of
# stdout (default 60) and 20 of stderr, then exits 1.
set -u
case_name=$1
weftrun=$2
perf=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
out=$dir/out
err=$dir/err

fail() {
	echo "FAIL ($case_name): $*" >&2
	echo "--- stdout:" >&2
	head -"${FAIL_LINES:-60}" "$out" >&2
	echo "--- stderr:" >&2
	head -20 "$err" >&2
	exit 1
}
