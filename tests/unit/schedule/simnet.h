/* A simulated network for schedule tests (tests/unit/schedule): every rank's executor
 * runs in one process; messages match by (src, dst, tag) and every delivery step happens
 * in a random order chosen by a seeded PRNG. */
#ifndef WT_TEST_SIMNET_H
#define WT_TEST_SIMNET_H

#include <stddef.h>
#include <stdint.h>

#include "layers/schedule/exec.h"

typedef struct simnet simnet_t;

simnet_t *simnet_new(int nranks, uint64_t seed);
void simnet_free(simnet_t *s);
/* The network table rank r's executor uses. */
const wt_sched_net_t *simnet_net(simnet_t *s, int rank);

/* Run one random event; returns 0 when nothing can happen. */
int simnet_step(simnet_t *s);
/* Run events until nothing can happen; returns how many ran. */
size_t simnet_run(simnet_t *s);

/* Fault injection: rank's nth post (0-based, sends and receives together) returns st;
 * rank's nth receive completion reports st instead of delivering. */
void simnet_fail_post(simnet_t *s, int rank, int nth, weft_status_t st);
void simnet_fail_recv(simnet_t *s, int rank, int nth, weft_status_t st);

/* Shared slots: a region of region_bytes per rank, reset to base; the ranks' networks then
 * offer slots, waits and wakes. A wait is checked at a random moment after each wake. */
void simnet_enable_slots(simnet_t *s, size_t region_bytes, uint64_t base);
void *simnet_region(simnet_t *s, int rank);
/* Number of slot_wake calls rank made. */
size_t simnet_wakes(const simnet_t *s, int rank);
/* rank's nth wait check (0-based) completes with st, as if the peer had failed. */
void simnet_fail_wait(simnet_t *s, int rank, int nth, weft_status_t st);

/* Peers' buffers (plans with peer steps; needs slots): all ranks live in this process, so a
 * peer's buffer is reached at its own address, either mapped (peer_map returns it) or by
 * peer_copy (memcpy), every time, never, or by a coin flip per step. */
enum { SIMNET_PEERS_COPY = 0, SIMNET_PEERS_MAP = 1, SIMNET_PEERS_MIXED = 2 };
void simnet_enable_peers(simnet_t *s, int mode);
size_t simnet_peer_maps(const simnet_t *s, int rank);
size_t simnet_peer_copies(const simnet_t *s, int rank);
/* rank's nth peer copy (0-based) fails with st. */
void simnet_fail_peer_copy(simnet_t *s, int rank, int nth, weft_status_t st);

/* Ops of rank that are posted and neither completed nor cancelled (waits included). */
size_t simnet_live_ops(const simnet_t *s, int rank);
/* Distinct peers of rank's live receives and waits, sorted; returns how many. */
size_t simnet_live_recv_peers(const simnet_t *s, int rank, int *peers, size_t max);
/* Number of callbacks the simulation has run for rank's ops. */
size_t simnet_callbacks(const simnet_t *s, int rank);
/* Number of posts for rank (successful or not). */
size_t simnet_posts(const simnet_t *s, int rank);

/* xorshift PRNG shared with the tests. */
uint64_t simnet_rand(uint64_t *state);

#endif
