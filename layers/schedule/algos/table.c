/* The algorithm table, selection by cost model or WEFT_ALGO, and plan building
 * (layers/schedule). Adding an algorithm means one file under algos/ and one line here. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "layers/schedule/algos/algos.h"
#include "lib/util/dtype.h"
#include "lib/util/log.h"

/* Without a cost model, recursive doubling serves allreduce below 16 KiB. */
#define WT_SCHED_RECDBL_MAX_BYTES ((size_t)16 * 1024 - 1)

/* ---- cost formulas (alpha-beta-gamma; m in bytes as noted per collective) ---- */

static double lg(int n)
{
	return n > 1 ? ceil(log2((double)n)) : 0;
}

static int pow2(int n)
{
	return n > 0 && (n & (n - 1)) == 0;
}

static double elem_bytes(const wt_sched_args_t *a)
{
	return (double)a->count * (double)wt_util_dtype_size(a->dtype);
}

/* Folding the ranks beyond a power of two in and out costs two extra full messages. */
static double fold(const wt_sched_args_t *a, const wt_sched_cost_t *c, double m)
{
	return pow2(a->size) ? 0 : 2 * (c->alpha + m * c->beta) + m * c->gamma;
}

static double seg_of(const wt_sched_args_t *a)
{
	return (double)(a->seg_bytes ? a->seg_bytes : WT_SCHED_DEFAULT_SEG_BYTES);
}

/* m = the vector. */
static double c_ar_ring(const wt_sched_args_t *a, const wt_sched_cost_t *c)
{
	double n = a->size, m = elem_bytes(a);
	return 2 * (n - 1) * c->alpha + 2 * (n - 1) / n * m * c->beta + (n - 1) / n * m * c->gamma;
}

/* floor(log2 n): the exchange rounds among the largest power of two. */
static double lg_floor(int n)
{
	return n > 1 ? floor(log2((double)n)) : 0;
}

static double c_ar_recdbl(const wt_sched_args_t *a, const wt_sched_cost_t *c)
{
	double m = elem_bytes(a);
	return lg_floor(a->size) * (c->alpha + m * c->beta + m * c->gamma) + fold(a, c, m);
}

static double c_ar_raben(const wt_sched_args_t *a, const wt_sched_cost_t *c)
{
	double n = a->size, m = elem_bytes(a);
	return 2 * lg_floor(a->size) * c->alpha + 2 * (n - 1) / n * m * c->beta +
	       (n - 1) / n * m * c->gamma + fold(a, c, m);
}

/* All n-1 messages fly at once: one hop, but each rank injects and reduces n-1 whole
 * vectors, and the extra messages are not free (a quarter of alpha each, measured on shm). */
static double c_ar_oneshot(const wt_sched_args_t *a, const wt_sched_cost_t *c)
{
	double n = a->size, m = elem_bytes(a);
	return c->alpha * (1 + (n - 2) / 4) + (n - 1) * m * (c->beta + c->gamma);
}

static double c_ar_redbc(const wt_sched_args_t *a, const wt_sched_cost_t *c)
{
	double m = elem_bytes(a);
	return 2 * lg(a->size) * (c->alpha + m * c->beta) + lg(a->size) * m * c->gamma;
}

/* m = the gathered vector (size blocks). */
static double c_ag_ring(const wt_sched_args_t *a, const wt_sched_cost_t *c)
{
	double n = a->size, m = elem_bytes(a) * n;
	return (n - 1) * c->alpha + (n - 1) / n * m * c->beta;
}

static double c_ag_log(const wt_sched_args_t *a, const wt_sched_cost_t *c)
{
	double n = a->size, m = elem_bytes(a) * n;
	return lg(a->size) * c->alpha + (n - 1) / n * m * c->beta +
	       (pow2(a->size) ? 0 : 2 * c->alpha + m * c->beta);
}

static double c_ag_bruck(const wt_sched_args_t *a, const wt_sched_cost_t *c)
{
	double n = a->size, m = elem_bytes(a) * n;
	/* The final rotation is a local copy of the whole vector. */
	return lg(a->size) * c->alpha + (n - 1) / n * m * c->beta + m * c->gamma * 0.5;
}

/* m = the whole input (size blocks). */
static double c_rs_linear(const wt_sched_args_t *a, const wt_sched_cost_t *c)
{
	double n = a->size, m = elem_bytes(a) * n;
	return (n - 1) * c->alpha + (n - 1) / n * m * (c->beta + c->gamma);
}

static double c_rs_halving(const wt_sched_args_t *a, const wt_sched_cost_t *c)
{
	double n = a->size, m = elem_bytes(a) * n;
	return lg_floor(a->size) * c->alpha + (n - 1) / n * m * (c->beta + c->gamma) +
	       fold(a, c, m);
}

static double c_bc_binomial(const wt_sched_args_t *a, const wt_sched_cost_t *c)
{
	return lg(a->size) * (c->alpha + elem_bytes(a) * c->beta);
}

static double c_chain(const wt_sched_args_t *a, const wt_sched_cost_t *c, double per_byte)
{
	double m = elem_bytes(a), seg = seg_of(a);
	double segs = m > seg ? ceil(m / seg) : 1, piece = m / segs;
	return (a->size - 2 + segs) * (c->alpha + piece * per_byte);
}

static double c_bc_chain(const wt_sched_args_t *a, const wt_sched_cost_t *c)
{
	return c_chain(a, c, c->beta);
}

static double c_rd_binomial(const wt_sched_args_t *a, const wt_sched_cost_t *c)
{
	return lg(a->size) * (c->alpha + elem_bytes(a) * (c->beta + c->gamma));
}

static double c_rd_chain(const wt_sched_args_t *a, const wt_sched_cost_t *c)
{
	return c_chain(a, c, c->beta + c->gamma);
}

static double c_tree_blocks(const wt_sched_args_t *a, const wt_sched_cost_t *c)
{
	double n = a->size, m = elem_bytes(a) * n;
	return lg(a->size) * c->alpha + (n - 1) / n * m * c->beta;
}

static double c_a2a_pairwise(const wt_sched_args_t *a, const wt_sched_cost_t *c)
{
	double n = a->size, m = elem_bytes(a) * n;
	return (n - 1) * c->alpha + (n - 1) / n * m * c->beta;
}

static double c_a2a_bruck(const wt_sched_args_t *a, const wt_sched_cost_t *c)
{
	double m = elem_bytes(a) * a->size;
	/* Each of the log steps moves about half the vector and packs and unpacks it (local
	 * copies, priced like gamma), plus the two rotations. */
	return lg(a->size) * (c->alpha + m / 2 * (c->beta + 2 * c->gamma)) + 2 * m * c->gamma;
}

static double c_barrier(const wt_sched_args_t *a, const wt_sched_cost_t *c)
{
	return lg(a->size) * c->alpha;
}

/* One round of slot flags: a rank's flag reaches the others as one cache line, a fraction
 * of a shm message's alpha, and each further peer adds a little. */
static double slot_flags(const wt_sched_args_t *a, const wt_sched_cost_t *c)
{
	return c->alpha * (WT_SCHED_SLOT_ALPHA + WT_SCHED_SLOT_ALPHA_PEER * (a->size - 1));
}

/* The share of a pass's cost that a byte read out of a peer's slot costs (0 means 1). */
static double read_share(const wt_sched_cost_t *c)
{
	return c->slot_read > 0 ? c->slot_read : 1;
}

/* What a byte moved through the slots costs, as a share of a message's byte (beta), in the
 * collectives priced so (allgather, alltoall, broadcast): cost->slot_read where it is set
 * (ranks sharing cores), else WT_SCHED_SLOT_BETA_SHARE at 2 ranks. With a core per rank the message
 * path moves mid-sized blocks faster than the slots: 2 ranks, 2026-12-07, medians of 5
 * alternating weft-perf sweeps with the vCPUs near (one far), automatic (slots) / without
 * slots: allgather of 32 KiB 3.73 / 2.87 us, 64 KiB 7.42 / 4.72, 128 KiB 13.1 / 7.3, 256 KiB
 * 26.7 / 13.6 (far 38.4 / 23.6); alltoall of 64 KiB 7.43 / 4.81, 256 KiB 22.4 / 14.0;
 * broadcast of 64 KiB 7.98 / 5.54 (far 16.2 / 5.1), 256 KiB 23.9 / 18.5; at 16 KiB the
 * slots kept their lead near (allgather 2.05 / 2.47, broadcast 2.62 / 2.72). The share puts
 * the turn at blocks of about 10 KiB. Measured at 2 ranks only (a 2-core machine): more
 * ranks with a core each keep a share of 1. */
#define WT_SCHED_SLOT_BETA_SHARE 1.8

static double beta_share(const wt_sched_args_t *a, const wt_sched_cost_t *c)
{
	if (c->slot_read > 0)
		return c->slot_read;
	return a->size == 2 ? WT_SCHED_SLOT_BETA_SHARE : 1;
}

/* Whether the call can go through the slots: they exist and hold what a rank publishes. */
static int slot_fits(const wt_sched_args_t *a, double publish)
{
	return a->slot_bytes != 0 && publish <= (double)a->slot_bytes;
}

/* Shared slots (slots.c): no message at all, one round of flags; bytes are copied once
 * into the slot and read once out of each slot read, priced like the other passes over
 * memory (gamma; reads at cost->slot_read of it). Infinite where the slots are missing or
 * too small, so the message algorithms serve those args. */
static double slot_cost(const wt_sched_args_t *a, const wt_sched_cost_t *c, double publish,
			double read)
{
	if (!slot_fits(a, publish))
		return HUGE_VAL;
	return slot_flags(a, c) + (publish + read * read_share(c)) * c->gamma;
}

static double c_ar_slots(const wt_sched_args_t *a, const wt_sched_cost_t *c)
{
	double m = elem_bytes(a);
	return slot_cost(a, c, m, a->size * m);
}

/* Through the peers' buffers (allreduce_direct.c): two flag rounds, then each rank reads
 * its share of every input (m in all), sums it and writes it to the n-1 peers. Offered
 * only when the buffers are weft_mem (args->mem): peers then map them; through CMA copies
 * (process_vm_readv/writev, 5.5 GB/s in 64 KiB pieces here, pages pinned each time) the
 * same plan measured 1.3-2.7x slower than the ring at 1-64 MiB. */
static double c_ar_direct(const wt_sched_args_t *a, const wt_sched_cost_t *c)
{
	double n = a->size, m = elem_bytes(a);

	if (a->slot_bytes < WT_SCHED_PEER_DESC_BYTES || !a->mem)
		return HUGE_VAL;
	return 2 * slot_flags(a, c) + m * c->gamma + (n - 1) / n * m * c->beta;
}

/* Slot calls a call whose piece per rank is m bytes takes (slots.c), one round of flags
 * each; 0 where the slots cannot take it. */
static double slot_parts(const wt_sched_args_t *a, double m)
{
	size_t part;

	return (double)wt_sched_slot_nparts(a, (size_t)m, &part);
}

/* Two slot calls per piece of a slot (slots.c): every rank copies the piece in, sums its
 * share of it from every slot, copies the share in again and reads the other shares out:
 * 2 + 2/n passes over the piece where the one-shot makes n + 1, half of them reads from
 * slots. Its second round of flags needs every rank to have run again after the first,
 * which where ranks share cores is a round of scheduling: priced as alpha for every two
 * ranks. Measured, 4 ranks on 2 cores, weft-perf -n 30 alternating, two-shot / one-shot /
 * rabenseifner: 1 KiB 42-93 / 25 / - us, 256 KiB 102 / 107 / -, 512 KiB 172-246 / 205-224 /
 * 378-647, 1 MiB 457-510 / 709-835 / 709-858, 2 MiB 1.02-1.24 ms / - / 1.27-1.70, 4 MiB
 * 2.28-2.75 / - / 2.48-3.21; 8 ranks, against the automatic choice of before: 1 MiB
 * 1.37-1.39 / 2.11-2.63 ms, 64 KiB 201-212 / 153-156 us. */
static double c_ar_slots_twoshot(const wt_sched_args_t *a, const wt_sched_cost_t *c)
{
	double n = a->size, m = elem_bytes(a), parts = slot_parts(a, m);

	/* from a call of WT_SCHED_STREAM_MIN up nothing stays in the shared cache: reads from
	 * slots cost what other reads do (4 ranks on 2 cores, two-shot / rabenseifner: 16 MiB
	 * 10.3-10.7 / 10.1-12.9 ms, 32 MiB 22.2-23.2 / 20.5-21.3) */
	double rs = m >= (double)WT_SCHED_STREAM_MIN ? 1 : read_share(c);

	if (parts == 0 || 2 * parts > WT_SCHED_SLOT_MAX_PARTS)
		return HUGE_VAL;
	return parts * (2 * slot_flags(a, c) + c->alpha * n / 2) +
	       (m + 2 * m / n + 2 * (n - 1) / n * m * rs) * c->gamma;
}

/* A block larger than a slot goes in parts (slots.c). Each block a rank gathers moves as
 * a message's bytes do through a ring (its owner copies it in once, for every reader; a
 * reader copies it out), without the message's alpha: priced as those messages' bytes at
 * beta_share of beta, plus a round of flags per part, as the broadcast below. (Measured
 * earlier, 2 ranks with a core each, ring / slots: 64 KiB 5.8-5.9 / 3.8-4.0 us, 256 KiB
 * 15.4-15.8 / 10.5-13.0; the message path has since caught up, see beta_share.) */
static double c_ag_slots(const wt_sched_args_t *a, const wt_sched_cost_t *c)
{
	double m = elem_bytes(a), parts = slot_parts(a, m);

	if (parts == 0)
		return HUGE_VAL;
	return parts * slot_flags(a, c) + (a->size - 1) * m * c->beta * beta_share(a, c);
}

static double c_rs_slots(const wt_sched_args_t *a, const wt_sched_cost_t *c)
{
	double m = elem_bytes(a);
	return slot_cost(a, c, a->size * m, a->size * m);
}

/* A broadcast through the slots moves each byte as one message does through a ring (the
 * root copies it in, a reader copies it out; the readers at once), without the message's
 * alpha and rendezvous: priced as one message's bytes at beta_share of beta, plus a round
 * of flags per slot's worth of it. (Measured earlier, 2 ranks with a core each, binomial /
 * slots: 16 KiB 1.26-2.66 / 0.88-1.45 us, 64 KiB 2.80-5.37 / 1.63-2.49; see beta_share for
 * now.) */
static double c_bc_slots(const wt_sched_args_t *a, const wt_sched_cost_t *c)
{
	double m = elem_bytes(a), parts = slot_parts(a, m);

	if (parts == 0)
		return HUGE_VAL;
	return parts * slot_flags(a, c) + m * c->beta * beta_share(a, c);
}

static double c_rd_slots(const wt_sched_args_t *a, const wt_sched_cost_t *c)
{
	double m = elem_bytes(a);
	return slot_cost(a, c, m, a->size * m);
}

/* As the allgather: the blocks for the peers move as messages' bytes do (the copy of our
 * own block is pairwise's local copy, which its price leaves out too), in parts only at 2
 * ranks out of place (slots.c). */
static double c_a2a_slots(const wt_sched_args_t *a, const wt_sched_cost_t *c)
{
	double m = elem_bytes(a), most = (double)wt_sched_alltoall_slot_most(a->size, (size_t)m);
	double parts = 1;

	if (wt_sched_alltoall_slot_parts_ok(a))
		parts = slot_parts(a, most);
	else if (!slot_fits(a, most))
		parts = 0;
	if (parts == 0 || (c->xchg_get_min > 0 && m >= (double)c->xchg_get_min))
		return HUGE_VAL;
	return parts * slot_flags(a, c) + (a->size - 1) * m * c->beta * beta_share(a, c);
}

static double c_barrier_slots(const wt_sched_args_t *a, const wt_sched_cost_t *c)
{
	return slot_cost(a, c, 0, 0);
}

#define ALL 0, SIZE_MAX
static const wt_sched_algo_t algo_table[] = {
    {"recursive_doubling", WT_COLL_ALLREDUCE, wt_sched_allreduce_recdbl, 0,
     WT_SCHED_RECDBL_MAX_BYTES, c_ar_recdbl},
    {"ring", WT_COLL_ALLREDUCE, wt_sched_allreduce_ring, WT_SCHED_RECDBL_MAX_BYTES + 1, SIZE_MAX,
     c_ar_ring},
    {"rabenseifner", WT_COLL_ALLREDUCE, wt_sched_allreduce_rabenseifner, 1, 0, c_ar_raben},
    {"reduce_bcast", WT_COLL_ALLREDUCE, wt_sched_allreduce_reduce_bcast, 1, 0, c_ar_redbc},
    {"oneshot", WT_COLL_ALLREDUCE, wt_sched_allreduce_oneshot, 1, 0, c_ar_oneshot},
    {"slots", WT_COLL_ALLREDUCE, wt_sched_allreduce_slots, 1, 0, c_ar_slots},
    {"slots_twoshot", WT_COLL_ALLREDUCE, wt_sched_allreduce_slots_twoshot, 1, 0,
     c_ar_slots_twoshot},
    {"direct", WT_COLL_ALLREDUCE, wt_sched_allreduce_direct, 1, 0, c_ar_direct},
    {"ring", WT_COLL_ALLGATHER, wt_sched_allgather_ring, ALL, c_ag_ring},
    {"recursive_doubling", WT_COLL_ALLGATHER, wt_sched_allgather_recdbl, 1, 0, c_ag_log},
    {"bruck", WT_COLL_ALLGATHER, wt_sched_allgather_bruck, 1, 0, c_ag_bruck},
    {"slots", WT_COLL_ALLGATHER, wt_sched_allgather_slots, 1, 0, c_ag_slots},
    {"ring", WT_COLL_REDUCE_SCATTER, wt_sched_reduce_scatter_ring, ALL, c_rs_linear},
    {"recursive_halving", WT_COLL_REDUCE_SCATTER, wt_sched_reduce_scatter_rechalving, 1, 0,
     c_rs_halving},
    {"pairwise", WT_COLL_REDUCE_SCATTER, wt_sched_reduce_scatter_pairwise, 1, 0, c_rs_linear},
    {"slots", WT_COLL_REDUCE_SCATTER, wt_sched_reduce_scatter_slots, 1, 0, c_rs_slots},
    {"binomial", WT_COLL_BROADCAST, wt_sched_bcast_binomial, ALL, c_bc_binomial},
    {"chain", WT_COLL_BROADCAST, wt_sched_bcast_chain, 1, 0, c_bc_chain},
    {"slots", WT_COLL_BROADCAST, wt_sched_bcast_slots, 1, 0, c_bc_slots},
    {"binomial", WT_COLL_REDUCE, wt_sched_reduce_binomial, ALL, c_rd_binomial},
    {"chain", WT_COLL_REDUCE, wt_sched_reduce_chain, 1, 0, c_rd_chain},
    {"slots", WT_COLL_REDUCE, wt_sched_reduce_slots, 1, 0, c_rd_slots},
    {"binomial", WT_COLL_GATHER, wt_sched_gather_binomial, ALL, c_tree_blocks},
    {"binomial", WT_COLL_SCATTER, wt_sched_scatter_binomial, ALL, c_tree_blocks},
    {"pairwise", WT_COLL_ALLTOALL, wt_sched_alltoall_pairwise, ALL, c_a2a_pairwise},
    {"bruck", WT_COLL_ALLTOALL, wt_sched_alltoall_bruck, 1, 0, c_a2a_bruck},
    {"slots", WT_COLL_ALLTOALL, wt_sched_alltoall_slots, 1, 0, c_a2a_slots},
    {"pairwise", WT_COLL_ALLTOALLV, wt_sched_alltoallv_pairwise, ALL, NULL},
    {"dissemination", WT_COLL_BARRIER, wt_sched_barrier_dissemination, ALL, c_barrier},
    {"slots", WT_COLL_BARRIER, wt_sched_barrier_slots, 1, 0, c_barrier_slots},
    {"direct", WT_COLL_SEND, wt_sched_send_direct, ALL, NULL},
    {"direct", WT_COLL_RECV, wt_sched_recv_direct, ALL, NULL},
};
#undef ALL

#define NALGOS (sizeof(algo_table) / sizeof(algo_table[0]))

const wt_sched_algo_t *wt_sched_algo_table(size_t *n)
{
	*n = NALGOS;
	return algo_table;
}

static const char *const coll_names[WT_COLL_COUNT_] = {
    "allreduce", "allgather", "reduce_scatter", "broadcast", "reduce", "gather",
    "scatter",	 "alltoall",  "alltoallv",	"barrier",   "send",   "recv",
};

const char *wt_sched_coll_name(wt_sched_coll_t coll)
{
	return (unsigned)coll < WT_COLL_COUNT_ ? coll_names[coll] : "unknown";
}

int wt_sched_coll_from_name(const char *name)
{
	for (int i = 0; i < WT_COLL_COUNT_; i++) {
		if (strcasecmp(coll_names[i], name) == 0)
			return i;
	}
	return -1;
}

static const wt_sched_algo_t *find_algo(wt_sched_coll_t coll, const char *name, size_t len)
{
	for (size_t i = 0; i < NALGOS; i++) {
		if (algo_table[i].coll == coll && strlen(algo_table[i].name) == len &&
		    strncasecmp(algo_table[i].name, name, len) == 0)
			return &algo_table[i];
	}
	return NULL;
}

/* Walks "a:b,c" entries; calls fn(coll text, algo text) for each. Returns the first
 * non-OK status of fn. A bare name has an empty coll. */
typedef weft_status_t (*spec_fn_t)(const char *coll, size_t clen, const char *algo, size_t alen,
				   void *arg, char *err, size_t errlen);

static weft_status_t spec_walk(const char *spec, spec_fn_t fn, void *arg, char *err, size_t errlen)
{
	const char *p = spec;

	while (p != NULL && *p != '\0') {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		const char *colon = memchr(p, ':', len);
		weft_status_t st;

		while (len > 0 && (*p == ' ' || *p == '\t')) {
			p++;
			len--;
		}
		while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t'))
			len--;
		if (len == 0) {
			snprintf(err, errlen, "WEFT_ALGO: empty entry in '%s'", spec);
			return WEFT_ERR_INVALID_ARG;
		}
		colon = memchr(p, ':', len);
		if (colon != NULL)
			st = fn(p, (size_t)(colon - p), colon + 1, len - (size_t)(colon - p) - 1,
				arg, err, errlen);
		else
			st = fn("", 0, p, len, arg, err, errlen);
		if (st != WEFT_OK)
			return st;
		p = end ? end + 1 : NULL;
	}
	return WEFT_OK;
}

static int coll_of_text(const char *coll, size_t clen)
{
	for (int i = 0; i < WT_COLL_COUNT_; i++) {
		if (strlen(coll_names[i]) == clen && strncasecmp(coll_names[i], coll, clen) == 0)
			return i;
	}
	return -1;
}

/* "!name" forbids an algorithm instead of forcing it. */
static int negated(const char **algo, size_t *alen)
{
	if (*alen == 0 || **algo != '!')
		return 0;
	(*algo)++;
	(*alen)--;
	return 1;
}

static weft_status_t check_entry(const char *coll, size_t clen, const char *algo, size_t alen,
				 void *arg, char *err, size_t errlen)
{
	int found = 0;

	(void)arg;
	negated(&algo, &alen);
	if (clen > 0) {
		int c = coll_of_text(coll, clen);
		if (c < 0) {
			snprintf(err, errlen, "WEFT_ALGO: unknown collective '%.*s'", (int)clen,
				 coll);
			return WEFT_ERR_INVALID_ARG;
		}
		found = find_algo((wt_sched_coll_t)c, algo, alen) != NULL;
		if (!found) {
			snprintf(err, errlen, "WEFT_ALGO: %s has no algorithm '%.*s'",
				 coll_names[c], (int)alen, algo);
			return WEFT_ERR_INVALID_ARG;
		}
		return WEFT_OK;
	}
	for (int c = 0; c < WT_COLL_COUNT_ && !found; c++)
		found = find_algo((wt_sched_coll_t)c, algo, alen) != NULL;
	if (!found) {
		snprintf(err, errlen, "WEFT_ALGO: no collective has an algorithm '%.*s'", (int)alen,
			 algo);
		return WEFT_ERR_INVALID_ARG;
	}
	return WEFT_OK;
}

weft_status_t wt_sched_algo_spec_check(const char *spec, char *err, size_t errlen)
{
	if (spec == NULL)
		return WEFT_OK;
	return spec_walk(spec, check_entry, NULL, err, errlen);
}

#define WT_SCHED_MAX_FORBID 16

struct pick {
	wt_sched_coll_t coll;
	const wt_sched_algo_t *algo;
	int named; /* an entry named this collective or a bare name it has */
	char name[64];
	/* "!name" entries for this collective: left out of the automatic choice */
	const wt_sched_algo_t *forbid[WT_SCHED_MAX_FORBID];
	int nforbid;
};

static int forbidden(const struct pick *pk, const wt_sched_algo_t *a)
{
	for (int i = 0; pk && i < pk->nforbid; i++)
		if (pk->forbid[i] == a)
			return 1;
	return 0;
}

static weft_status_t pick_entry(const char *coll, size_t clen, const char *algo, size_t alen,
				void *arg, char *err, size_t errlen)
{
	struct pick *pk = arg;
	const wt_sched_algo_t *a;
	int neg = negated(&algo, &alen);

	(void)err;
	(void)errlen;
	if (clen > 0 && coll_of_text(coll, clen) != (int)pk->coll)
		return WEFT_OK;
	a = find_algo(pk->coll, algo, alen);
	if (neg) {
		if (a != NULL && !forbidden(pk, a) && pk->nforbid < WT_SCHED_MAX_FORBID)
			pk->forbid[pk->nforbid++] = a;
		return WEFT_OK;
	}
	if (clen == 0 && a == NULL)
		return WEFT_OK; /* a bare name other collectives have */
	/* The last entry for a collective wins, as later settings override earlier ones. */
	pk->algo = a;
	pk->named = 1;
	snprintf(pk->name, sizeof(pk->name), "%.*s", (int)(alen < 60 ? alen : 60), algo);
	return WEFT_OK;
}

static const wt_sched_algo_t *by_cost(const wt_sched_args_t *a, const wt_sched_cost_t *c,
				      const struct pick *pk)
{
	const wt_sched_algo_t *best = NULL;
	double best_t = 0;

	for (size_t i = 0; i < NALGOS; i++) {
		const wt_sched_algo_t *e = &algo_table[i];
		double t;
		if (e->coll != a->coll || forbidden(pk, e))
			continue;
		if (e->cost == NULL) {
			if (best == NULL)
				best = e;
			continue;
		}
		t = e->cost(a, c);
		if (best == NULL || best->cost == NULL || t < best_t) {
			best = e;
			best_t = t;
		}
	}
	return best;
}

/* The size-range default; when a forbid leaves it out, the first other algorithm of the
 * collective that is not forbidden either. */
static const wt_sched_algo_t *by_range(const wt_sched_args_t *a, const struct pick *pk)
{
	size_t elem = wt_util_dtype_size(a->dtype);
	size_t bytes = elem && a->count <= SIZE_MAX / elem ? a->count * elem : SIZE_MAX;
	const wt_sched_algo_t *other = NULL;

	for (size_t i = 0; i < NALGOS; i++) {
		const wt_sched_algo_t *e = &algo_table[i];

		if (e->coll != a->coll || forbidden(pk, e))
			continue;
		if (bytes >= e->min_bytes && bytes <= e->max_bytes)
			return e;
		if (!other)
			other = e;
	}
	return other;
}

weft_status_t wt_sched_algo_choose(const wt_sched_args_t *args, const char *spec,
				   const wt_sched_cost_t *cost, const wt_sched_algo_t **out,
				   char *err, size_t errlen)
{
	struct pick pk = {.coll = args->coll};
	weft_status_t st;

	if ((unsigned)args->coll >= WT_COLL_COUNT_) {
		snprintf(err, errlen, "schedule: unknown collective %d", (int)args->coll);
		return WEFT_ERR_INVALID_ARG;
	}
	if (spec != NULL && spec[0] != '\0') {
		st = spec_walk(spec, pick_entry, &pk, err, errlen);
		if (st != WEFT_OK)
			return st;
		if (pk.named) {
			if (pk.algo == NULL) {
				snprintf(err, errlen,
					 "WEFT_ALGO forces %s:%s, which does not exist",
					 coll_names[args->coll], pk.name);
				return WEFT_ERR_UNSUPPORTED;
			}
			*out = pk.algo;
			return WEFT_OK;
		}
	}
	*out = cost != NULL ? by_cost(args, cost, &pk) : by_range(args, &pk);
	if (*out == NULL) {
		snprintf(err, errlen, "schedule: no algorithm for %s%s", coll_names[args->coll],
			 pk.nforbid ? " that WEFT_ALGO does not forbid" : "");
		return WEFT_ERR_UNSUPPORTED;
	}
	return WEFT_OK;
}

/* Kept for callers that force by plain name: NULL if forced names nothing for args. */
const wt_sched_algo_t *wt_sched_algo_select(const wt_sched_args_t *args, const char *forced)
{
	const wt_sched_algo_t *a = NULL;
	char err[160];

	if (args == NULL)
		return NULL;
	if (forced != NULL && forced[0] != '\0')
		return find_algo(args->coll, forced, strlen(forced));
	if (wt_sched_algo_choose(args, NULL, NULL, &a, err, sizeof(err)) != WEFT_OK)
		return NULL;
	return a;
}

weft_status_t wt_sched_allreduce_local(const wt_sched_args_t *a, wt_sched_plan_t *p)
{
	size_t bytes = a->count * wt_util_dtype_size(a->dtype);

	if (!a->in_place && bytes)
		wt_sched_copy(p, WT_SCHED_BUF_RECV, 0, WT_SCHED_BUF_SEND, 0, bytes, 0, NULL);
	return WEFT_OK;
}

static weft_status_t build_fail(weft_status_t st, char *err, size_t errlen, const char *msg)
{
	if (err && errlen)
		snprintf(err, errlen, "%s", msg);
	return st;
}

weft_status_t wt_sched_plan_build(const wt_sched_args_t *args, const wt_sched_algo_t *algo,
				  wt_sched_plan_t **out, char *err, size_t errlen)
{
	char why[256];
	wt_sched_plan_t *p;
	weft_status_t st;

	if (!out)
		return build_fail(WEFT_ERR_INVALID_ARG, err, errlen, "schedule: no output plan");
	st = wt_sched_args_check(args, why, sizeof(why));
	if (st) {
		WT_ERROR("%s", why);
		return build_fail(st, err, errlen, why);
	}
	if (!algo)
		algo = wt_sched_algo_select(args, NULL);
	if (!algo || algo->coll != args->coll || !algo->build) {
		snprintf(why, sizeof(why), "schedule: no %s algorithm %s for %s",
			 algo ? "usable" : "default", algo ? algo->name : "",
			 wt_sched_coll_name(args->coll));
		WT_ERROR("%s", why);
		return build_fail(WEFT_ERR_UNSUPPORTED, err, errlen, why);
	}
	p = wt_sched_plan_new(args);
	if (!p) {
		WT_ERROR("schedule: out of memory for a %s plan", algo->name);
		return build_fail(WEFT_ERR_NO_MEMORY, err, errlen, "schedule: out of memory");
	}
	wt_sched_plan_set_algo(p, algo->name);
	st = algo->build(args, p);
	if (st)
		wt_sched_fail(p, st, "%s: build failed", algo->name);
	st = wt_sched_plan_finalize(p);
	if (st) {
		snprintf(why, sizeof(why), "schedule: %s %s plan: %s",
			 wt_sched_coll_name(args->coll), algo->name, wt_sched_plan_error(p));
		wt_sched_plan_unref(p);
		return build_fail(st, err, errlen, why);
	}
	*out = p;
	return WEFT_OK;
}
