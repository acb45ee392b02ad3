/* Seeded fault injection at the link boundary (drivers/): WEFT_FAULT parsing and a link
 * that wraps any driver's link and drops, duplicates, corrupts, reorders or delays the
 * frames this process sends, so the channel's reliability protocol can be proven. */
#ifndef WT_FAULT_H
#define WT_FAULT_H

#include <stddef.h>
#include <stdint.h>
#include "drivers/link.h"

typedef struct {
	double drop, dup, reorder, corrupt; /* per-frame probabilities in [0,1] */
	uint32_t delay_us;		    /* every frame held this long; 0 = none */
	uint64_t seed;
	int peer;    /* only frames to this world rank; -1 = all peers */
	int enabled; /* the spec was non-empty */
} wt_fault_config_t;

/* Parses a WEFT_FAULT value: comma-separated key=value items, each key at most once:
 * drop, dup, reorder, corrupt (probabilities), delay_us (0..10000000), seed (uint64),
 * peer (world rank). NULL or "" gives a disabled config. On error returns
 * WEFT_ERR_INVALID_ARG, writes a message naming the bad part into err (if errlen > 0)
 * and leaves *cfg untouched. A non-empty spec is enabled even when every rate is zero:
 * wrapping a reliable link then still makes the channel run its reliability protocol. */
weft_status_t wt_fault_parse(const char *spec, wt_fault_config_t *cfg, char *err, size_t errlen);

/* Wraps inner in a fault-injecting link for this process (world rank rank). The wrapper
 * is a link of its own: same name and max_frame as inner, caps without RELIABLE and
 * ORDERED. Closing it frees the wrapper and what it holds but not inner, which the
 * caller closes right after (frames inner still references are freed with the wrapper). */
weft_status_t wt_fault_wrap(wt_link_t *inner, const wt_fault_config_t *cfg, int rank,
			    wt_link_t **out);

/* 1 if link was made by wt_fault_wrap. */
int wt_fault_is(wt_link_t *link);

#endif
