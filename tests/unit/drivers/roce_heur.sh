# Sourced by the RoCEv2 tshark checks (tests/unit/drivers/roce_tshark.sh,
# tests/netns/dpdk_capture.sh). Wireshark hands SEND payloads to heuristic upper-layer
# dissectors (RPC over RDMA, SMB Direct, NVMe over RDMA, ...) that call weft's payload
# malformed; roce_heur CAPTURE fills the array heur with --disable-heuristic for each of
# those this tshark knows, so that what is judged is the RoCEv2 framing.
roce_heur() {
	heur=()
	for h in rpcrdma_infiniband smb_direct_infiniband smcr_infiniband nvme_rdma \
		iser_infiniband lnet_ib sdp_infiniband fc_infiniband eth_over_ib mellanox_eoib \
		drbd_rdma; do
		if tshark -n -r "$1" -c 1 --disable-heuristic "$h" >/dev/null 2>&1; then
			heur+=(--disable-heuristic "$h")
		fi
	done
}
