/* The dpdk driver's internals (drivers/dpdk): the process-wide EAL, mbuf pool and named
 * port (eal.c) that every dpdk link of the process shares, and the names of the files a
 * memif pair uses. Only dpdk.c and the driver's own tests include this. */
#ifndef WT_DPDK_INT_H
#define WT_DPDK_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include "lib/util/crypto.h"
#include "lib/util/status.h"

/* mbuf data room after the headroom. It is larger than the memif buffer size on purpose:
 * net_memif then packs a chained packet into one ring buffer (its copy loop) instead of
 * one buffer per segment, and receives every packet into one mbuf. */
#define WT_DPDK_MBUF_ROOM 4608
#define WT_DPDK_MEMIF_BSIZE 4352 /* 4096 payload + every header + trailer, rounded up */
#define WT_DPDK_MEMIF_RSIZE 10	 /* log2 of the memif ring size */
#define WT_DPDK_IB_MTU_MAX 4096
#define WT_DPDK_IB_MTU_MIN 256
#define WT_DPDK_RING 1024 /* descriptors per queue */
#define WT_DPDK_DIR "/tmp"
#define WT_DPDK_PATH_MAX 108 /* sun_path */
#define WT_DPDK_JOB_MAX 40   /* keeps every socket path below sun_path's 108 bytes */

/* The port WEFT_DPDK_PORT names, shared by every dpdk link of the process and kept until
 * the process exits. lock serialises its rx/tx queue and everything of it dpdk.c keeps
 * (the demultiplexing table and the shared tx backlog). */
typedef struct wt_dpdk_port {
	pthread_mutex_t lock;
	uint16_t port_id;
	char devargs[256];
	char name[64];	 /* ethdev name */
	char driver[32]; /* PMD name, for the log */
	uint8_t mac[6];
	uint32_t ip;   /* IPv4, host order */
	uint32_t pmtu; /* RoCE payload per packet (IB path MTU) */
	int zero_copy; /* the PMD copies and frees an mbuf inside tx_burst */
	int multiseg;  /* the PMD sends chained mbufs */
	void *data;    /* dpdk.c's shared state, under lock */
} wt_dpdk_port_t;

/* Starts the EAL once per process (later calls return the first outcome) and creates the
 * mbuf pool. WEFT_OK, or WEFT_ERR_NO_DEVICE with the reason in why. */
weft_status_t wt_dpdk_eal_start(char *why, size_t whylen);
struct rte_mempool *wt_dpdk_pool(void);

/* The port WEFT_DPDK_PORT names, attached, configured and started on first use; *port =
 * NULL when the variable is unset. WEFT_ERR_NO_DEVICE (or INVALID_ARG for a malformed
 * setting) with the reason in why. The EAL must be up. */
weft_status_t wt_dpdk_named_port(wt_dpdk_port_t **port, char *why, size_t whylen);

/* A vdev port: attached with args, one rx and one tx queue, started when start is set.
 * WEFT_ERR_NO_DEVICE with the reason in why. */
weft_status_t wt_dpdk_vdev_open(const char *name, const char *args, int start, uint16_t *port,
				char *why, size_t whylen);
/* Stops, closes and detaches a port wt_dpdk_vdev_open made. */
void wt_dpdk_vdev_close(uint16_t port, const char *name);
/* rte_eth_dev_start; 0 or a negative errno. */
int wt_dpdk_port_start(uint16_t port);
/* 1 if the port's link is up. */
int wt_dpdk_link_up(uint16_t port);

/* Files of the memif pair (lo, hi) of job: the server's socket, the client's alias of it
 * (a process that is both ends needs two names: DPDK keys its sockets by path), and the
 * shared secret both ends present (derived from the job key). */
void wt_dpdk_memif_paths(const char *job, int lo, int hi, char *server, char *client, size_t len);
void wt_dpdk_memif_secret(const wt_util_key_t *key, const char *job, int lo, int hi, char *out,
			  size_t len);
/* Files of rank's doorbell: its socket and its "asleep" word. */
void wt_dpdk_bell_paths(const char *job, int rank, char *sock, char *flag, size_t len);

/* Parses WEFT_DPDK_EAL_ARGS-style text into argv (argv[0] = "weft"); exposed for tests.
 * Returns argc, or -1 with why filled. store holds the strings. */
int wt_dpdk_split_args(const char *text, char *store, size_t storelen, char **argv, int maxargs,
		       char *why, size_t whylen);

#endif
