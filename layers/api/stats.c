/* Per-link counters for users (weft_comm_link_stats) and the log at communicator destroy
 * (layers/api): a view of what the channel's link stacks counted. */
#include <stdio.h>
#include <string.h>
#include "layers/api/api_int.h"
#include "lib/util/log.h"

/* Lock held. */
static weft_status_t fill(weft_comm_t *comm, int peer, weft_link_stats_t *out)
{
	wt_link_stats_t st;
	const char *name = "";
	int reliable = 0;
	weft_status_t rc =
	    wt_chan_link_stats(comm->ctx->chan, comm->world[peer], &st, &name, &reliable);

	if (rc != WEFT_OK)
		return rc;
	memset(out, 0, sizeof(*out));
	out->size = sizeof(*out);
	snprintf(out->link, sizeof(out->link), "%s", name);
	out->reliability = reliable;
	out->frames_sent = st.frames_sent;
	out->bytes_sent = st.bytes_sent;
	out->frames_received = st.frames_received;
	out->bytes_received = st.bytes_received;
	out->retransmits = st.retransmits;
	out->timeouts = st.timeouts;
	out->drops = st.drops;
	out->duplicates = st.duplicates;
	out->corrupt = st.corrupt;
	out->rejected = st.rejected;
	out->rto_us = st.rto_us;
	out->srtt_us = st.srtt_us;
	out->window = st.window;
	out->in_flight = st.in_flight;
	out->fault_drops = st.fault_drops;
	out->fault_dups = st.fault_dups;
	out->fault_reorders = st.fault_reorders;
	out->fault_delays = st.fault_delays;
	out->fault_corrupts = st.fault_corrupts;
	return WEFT_OK;
}

WEFT_API weft_status_t weft_comm_link_stats(weft_comm_t *comm, int peer, weft_link_stats_t *stats)
{
	weft_link_stats_t full;
	weft_status_t st;

	if (comm == NULL)
		return WEFT_ERR_INVALID_ARG;
	if (stats == NULL || stats->size < sizeof(stats->size)) {
		wt_api_set_error(comm, "weft_comm_link_stats: %s",
				 stats == NULL
				     ? "stats is NULL"
				     : "stats->size is not set (sizeof(weft_link_stats_t))");
		return WEFT_ERR_INVALID_ARG;
	}
	if (peer < 0 || peer >= comm->size || peer == comm->rank) {
		wt_api_set_error(comm,
				 "weft_comm_link_stats: peer %d is not another rank of the "
				 "communicator (size %d, we are %d)",
				 peer, comm->size, comm->rank);
		return WEFT_ERR_INVALID_ARG;
	}
	pthread_mutex_lock(&comm->ctx->lock);
	st = fill(comm, peer, &full);
	pthread_mutex_unlock(&comm->ctx->lock);
	if (st != WEFT_OK) {
		wt_api_set_error(comm, "weft_comm_link_stats: no link to rank %d (world rank %d)",
				 peer, comm->world[peer]);
		return st;
	}
	size_t n = stats->size < sizeof(full) ? stats->size : sizeof(full);

	/* The caller's size stays as it was: it states what the caller's struct holds. */
	memcpy((char *)stats + sizeof(stats->size), (const char *)&full + sizeof(full.size),
	       n - sizeof(full.size));
	return WEFT_OK;
}

void wt_api_comm_log_stats(weft_comm_t *comm)
{
	if (comm == NULL || wt_util_log_level() < WT_LOG_INFO || comm->ctx->chan == NULL)
		return;
	pthread_mutex_lock(&comm->ctx->lock);
	for (int r = 0; r < comm->size; r++) {
		weft_link_stats_t s;

		if (r == comm->rank || fill(comm, r, &s) != WEFT_OK)
			continue;
		WT_INFO("comm %u: link to rank %d (world %d) over %s%s: sent %llu frames %llu "
			"bytes, received %llu frames %llu bytes",
			(unsigned)comm->id, r, comm->world[r], s.link,
			s.reliability ? " (reliability layer)" : "",
			(unsigned long long)s.frames_sent, (unsigned long long)s.bytes_sent,
			(unsigned long long)s.frames_received,
			(unsigned long long)s.bytes_received);
		if (s.reliability)
			WT_INFO(
			    "comm %u: link to rank %d: retransmits %llu, timeouts %llu, "
			    "drops %llu, duplicates %llu, corrupt %llu, rejected %llu, rto %llu "
			    "us, srtt %llu us, window %u, in flight %u",
			    (unsigned)comm->id, r, (unsigned long long)s.retransmits,
			    (unsigned long long)s.timeouts, (unsigned long long)s.drops,
			    (unsigned long long)s.duplicates, (unsigned long long)s.corrupt,
			    (unsigned long long)s.rejected, (unsigned long long)s.rto_us,
			    (unsigned long long)s.srtt_us, s.window, s.in_flight);
		if (s.fault_drops + s.fault_dups + s.fault_reorders + s.fault_delays +
			s.fault_corrupts >
		    0)
			WT_INFO("comm %u: link to rank %d: WEFT_FAULT injected %llu drops, %llu "
				"duplicates, %llu reorders, %llu delays, %llu corruptions",
				(unsigned)comm->id, r, (unsigned long long)s.fault_drops,
				(unsigned long long)s.fault_dups,
				(unsigned long long)s.fault_reorders,
				(unsigned long long)s.fault_delays,
				(unsigned long long)s.fault_corrupts);
	}
	pthread_mutex_unlock(&comm->ctx->lock);
}
