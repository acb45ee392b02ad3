/* The rendezvous store (lib/boot): a small TCP key-value server that ranks use to
 * publish and read link addresses. Every connection proves knowledge of the job token
 * by HMAC challenge-response in both directions; the token never crosses the wire.
 * A connection that fails authentication is refused and logged; the server goes on. */
#ifndef WT_BOOT_STORE_H
#define WT_BOOT_STORE_H

#include <stddef.h>
#include <stdint.h>
#include "lib/util/status.h"
#include "lib/util/crypto.h"

#define WT_BOOT_KEY_MAX 256          /* longest key, bytes */
#define WT_BOOT_VALUE_MAX (1u << 20) /* largest value, bytes */

typedef struct wt_boot_server wt_boot_server_t;
typedef struct wt_boot_store wt_boot_store_t;

/* Serve on host:port (host NULL = all addresses; port 0 = ephemeral) from a thread of
 * its own until stopped. */
weft_status_t wt_boot_server_start(const char *host, int port, const wt_util_key_t *key,
				   wt_boot_server_t **srv, char *err, size_t errlen);
int wt_boot_server_port(const wt_boot_server_t *srv);
/* Number of clients that completed authentication so far. */
uint64_t wt_boot_server_clients(const wt_boot_server_t *srv);
/* Number of connections refused for failing authentication so far. */
uint64_t wt_boot_server_refused(const wt_boot_server_t *srv);
void wt_boot_server_stop(wt_boot_server_t *srv);

/* Connect and authenticate, retrying refused/unreachable connects until timeout_s;
 * then WEFT_ERR_TIMEOUT with err naming host:port. A peer that fails the challenge
 * gives WEFT_ERR_AUTH. */
weft_status_t wt_boot_store_connect(const char *host, int port, const wt_util_key_t *key,
				    double timeout_s, wt_boot_store_t **st, char *err,
				    size_t errlen);
weft_status_t wt_boot_store_set(wt_boot_store_t *st, const char *key, const void *val,
				size_t len);
/* Wait until key exists (or timeout_s passes: WEFT_ERR_TIMEOUT), then copy its value
 * (WEFT_ERR_INVALID_ARG if it does not fit cap). */
weft_status_t wt_boot_store_get(wt_boot_store_t *st, const char *key, void *buf, size_t cap,
				size_t *len, double timeout_s);
/* Atomically add delta to the integer counter at key (created as 0); *out = new value. */
weft_status_t wt_boot_store_add(wt_boot_store_t *st, const char *key, int64_t delta,
				int64_t *out);
/* The local IP address (text) this client uses to reach the store: the address peers
 * on other hosts can reach us at. */
weft_status_t wt_boot_store_local_ip(const wt_boot_store_t *st, char *buf, size_t len);
/* Last error detail of this client. */
const char *wt_boot_store_error(const wt_boot_store_t *st);
void wt_boot_store_close(wt_boot_store_t *st);

#endif
