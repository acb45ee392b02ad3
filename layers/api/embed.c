/* The embedding path (layers/api): weft_get_unique_id serves a rendezvous store from the
 * calling process and packs its address and a fresh token into an id; weft_comm_init_rank
 * turns an id into a world communicator without any launcher environment. */
#include <arpa/inet.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "lib/util/env.h"
#include "lib/util/log.h"
#include "layers/api/api_int.h"

/* Layout of weft_unique_id_t.bytes (integers big-endian, unused bytes zero):
 *   0  magic "WFID"          4  version            5  token length (32)
 *   6  address length        7  reserved           8  port (u16)
 *  10  reserved (6)         16  token (32 bytes)  48  address text (64, NUL padded)
 * 112  reserved (16) */
#define WT_EMBED_MAGIC "WFID"
#define WT_EMBED_VERSION 1
#define WT_EMBED_OFF_VERSION 4
#define WT_EMBED_OFF_TOKLEN 5
#define WT_EMBED_OFF_ADDRLEN 6
#define WT_EMBED_OFF_PORT 8
#define WT_EMBED_OFF_TOKEN 16
#define WT_EMBED_TOKEN_LEN 32
#define WT_EMBED_OFF_ADDR 48
#define WT_EMBED_ADDR_CAP 64
#define WT_EMBED_OFF_TAIL (WT_EMBED_OFF_ADDR + WT_EMBED_ADDR_CAP)
#define WT_EMBED_RANKS_MAX (1 << 24)
#define WT_EMBED_SERVERS_MAX 256

_Static_assert(WT_EMBED_OFF_TAIL <= sizeof(((weft_unique_id_t *)0)->bytes),
	       "unique id layout exceeds weft_unique_id_t");

/* Stores started by weft_get_unique_id serve until the process ends; they are kept here
 * so that a loaded library can stop them before it goes (dlclose, exit). */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static wt_boot_server_t *registry[WT_EMBED_SERVERS_MAX];
static int registry_n;
static pid_t registry_pid;

/* A forked child inherits the list but not the threads: the servers are its parent's, and
 * stopping them would write to the parent's wake pipes. */
static void registry_forget_if_forked(void)
{
	if (registry_n > 0 && registry_pid != getpid())
		registry_n = 0;
	registry_pid = getpid();
}

static weft_status_t registry_add(wt_boot_server_t *srv)
{
	weft_status_t st = WEFT_OK;

	pthread_mutex_lock(&registry_lock);
	registry_forget_if_forked();
	if (registry_n < WT_EMBED_SERVERS_MAX)
		registry[registry_n++] = srv;
	else
		st = WEFT_ERR_NO_MEMORY;
	pthread_mutex_unlock(&registry_lock);
	return st;
}

__attribute__((destructor)) static void registry_stop_all(void)
{
	/* Another thread may hold the lock while the process exits: leave its servers. */
	if (pthread_mutex_trylock(&registry_lock) != 0)
		return;
	if (registry_pid == getpid()) {
		for (int i = 0; i < registry_n; i++)
			wt_boot_server_stop(registry[i]);
	}
	registry_n = 0;
	pthread_mutex_unlock(&registry_lock);
}

static int is_ip_literal(const char *s)
{
	unsigned char buf[16];
	static const unsigned char zero[16];

	if (inet_pton(AF_INET, s, buf) == 1)
		return memcmp(buf, zero, 4) != 0 ? 4 : 0;
	if (inet_pton(AF_INET6, s, buf) == 1)
		return memcmp(buf, zero, 16) != 0 ? 6 : 0;
	return 0;
}

/* DNS name: labels of letters, digits and '-', separated by single dots. */
static int is_hostname(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || s[0] == '.' || s[0] == '-' || s[n - 1] == '.')
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			 (c >= '0' && c <= '9') || c == '-' || (c == '.' && s[i + 1] != '.');
		if (!ok)
			return 0;
	}
	return 1;
}

/* An address ranks can dial: an IP literal other than the wildcard, or a host name. */
static int addr_ok(const char *s)
{
	return strlen(s) < WT_EMBED_ADDR_CAP && (is_ip_literal(s) || is_hostname(s));
}

/* WEFT_SOCKET_ADDR (an IP literal), else MASTER_ADDR, else loopback. */
static weft_status_t pick_address(char *out, size_t cap)
{
	const char *s = wt_util_env_str("WEFT_SOCKET_ADDR");

	if (s != NULL) {
		if (strlen(s) >= WT_EMBED_ADDR_CAP || !is_ip_literal(s)) {
			WT_ERROR("weft_get_unique_id: WEFT_SOCKET_ADDR='%.80s' is not an IPv4 or "
				 "IPv6 address ranks can dial (no wildcard, no scope, no name)",
				 s);
			return WEFT_ERR_INVALID_ARG;
		}
		snprintf(out, cap, "%s", s);
		return WEFT_OK;
	}
	s = wt_util_env_str("MASTER_ADDR");
	if (s != NULL) {
		if (!addr_ok(s)) {
			WT_ERROR("weft_get_unique_id: MASTER_ADDR='%.80s' is not an address or "
				 "host name of at most %d characters",
				 s, WT_EMBED_ADDR_CAP - 1);
			return WEFT_ERR_INVALID_ARG;
		}
		snprintf(out, cap, "%s", s);
		return WEFT_OK;
	}
	snprintf(out, cap, "127.0.0.1");
	return WEFT_OK;
}

/* The token string both ends derive the key from: the raw bytes in hex. */
static void token_key(const unsigned char *token, wt_util_key_t *key)
{
	static const char hex[] = "0123456789abcdef";
	char text[2 * WT_EMBED_TOKEN_LEN + 1];

	for (int i = 0; i < WT_EMBED_TOKEN_LEN; i++) {
		text[2 * i] = hex[token[i] >> 4];
		text[2 * i + 1] = hex[token[i] & 15];
	}
	text[2 * WT_EMBED_TOKEN_LEN] = '\0';
	wt_util_key_from_token(key, text);
	explicit_bzero(text, sizeof(text));
}

static void id_encode(weft_unique_id_t *id, const unsigned char *token, const char *addr, int port)
{
	unsigned char *p = id->bytes;
	size_t alen = strlen(addr);

	memset(id, 0, sizeof(*id));
	memcpy(p, WT_EMBED_MAGIC, 4);
	p[WT_EMBED_OFF_VERSION] = WT_EMBED_VERSION;
	p[WT_EMBED_OFF_TOKLEN] = WT_EMBED_TOKEN_LEN;
	p[WT_EMBED_OFF_ADDRLEN] = (unsigned char)alen;
	p[WT_EMBED_OFF_PORT] = (unsigned char)(port >> 8);
	p[WT_EMBED_OFF_PORT + 1] = (unsigned char)port;
	memcpy(p + WT_EMBED_OFF_TOKEN, token, WT_EMBED_TOKEN_LEN);
	memcpy(p + WT_EMBED_OFF_ADDR, addr, alen);
}

static int all_zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i] != 0)
			return 0;
	}
	return 1;
}

/* The id crossed the host's own channel: check every field before trusting any. */
static weft_status_t id_decode(const weft_unique_id_t *id, wt_api_boot_t *b, char *err,
			       size_t errlen)
{
	const unsigned char *p = id->bytes;
	size_t alen = p[WT_EMBED_OFF_ADDRLEN];
	int port = p[WT_EMBED_OFF_PORT] << 8 | p[WT_EMBED_OFF_PORT + 1];

	if (memcmp(p, WT_EMBED_MAGIC, 4) != 0) {
		snprintf(err, errlen, "not a weft unique id (bad magic)");
		return WEFT_ERR_INVALID_ARG;
	}
	if (p[WT_EMBED_OFF_VERSION] != WT_EMBED_VERSION) {
		snprintf(err, errlen, "unique id version %d, this library reads version %d",
			 p[WT_EMBED_OFF_VERSION], WT_EMBED_VERSION);
		return WEFT_ERR_INVALID_ARG;
	}
	if (p[WT_EMBED_OFF_TOKLEN] != WT_EMBED_TOKEN_LEN) {
		snprintf(err, errlen, "unique id token is %d bytes, expected %d",
			 p[WT_EMBED_OFF_TOKLEN], WT_EMBED_TOKEN_LEN);
		return WEFT_ERR_INVALID_ARG;
	}
	if (alen == 0 || alen >= WT_EMBED_ADDR_CAP ||
	    memchr(p + WT_EMBED_OFF_ADDR, '\0', alen) != NULL ||
	    !all_zero(p + WT_EMBED_OFF_ADDR + alen, WT_EMBED_ADDR_CAP - alen)) {
		snprintf(err, errlen, "unique id address length %zu does not match its text", alen);
		return WEFT_ERR_INVALID_ARG;
	}
	if (p[7] != 0 ||
	    !all_zero(p + WT_EMBED_OFF_PORT + 2, WT_EMBED_OFF_TOKEN - WT_EMBED_OFF_PORT - 2) ||
	    !all_zero(p + WT_EMBED_OFF_TAIL, sizeof(id->bytes) - WT_EMBED_OFF_TAIL)) {
		snprintf(err, errlen, "unique id has non-zero reserved bytes");
		return WEFT_ERR_INVALID_ARG;
	}
	if (port == 0) {
		snprintf(err, errlen, "unique id has port 0");
		return WEFT_ERR_INVALID_ARG;
	}
	memcpy(b->host, p + WT_EMBED_OFF_ADDR, alen);
	b->host[alen] = '\0';
	if (!addr_ok(b->host)) {
		snprintf(err, errlen, "unique id address is not an IP address or host name");
		return WEFT_ERR_INVALID_ARG;
	}
	b->port = port;
	token_key(p + WT_EMBED_OFF_TOKEN, &b->key);
	return WEFT_OK;
}

WEFT_API weft_status_t weft_get_unique_id(weft_unique_id_t *id)
{
	unsigned char token[WT_EMBED_TOKEN_LEN];
	char addr[WT_EMBED_ADDR_CAP], err[WT_API_ERR_LEN] = "";
	wt_boot_server_t *srv = NULL;
	wt_util_key_t key;
	weft_status_t st;

	if (id == NULL) {
		WT_ERROR("weft_get_unique_id: id is NULL");
		return WEFT_ERR_INVALID_ARG;
	}
	st = pick_address(addr, sizeof(addr));
	if (st != WEFT_OK)
		return st;
	if (wt_util_crypto_init() != WEFT_OK) {
		WT_ERROR("weft_get_unique_id: libsodium failed to initialise");
		return WEFT_ERR_SYSTEM;
	}
	wt_util_random(token, sizeof(token));
	token_key(token, &key);
	/* Every address, so that ranks reach it by whichever one the id names. */
	st = wt_boot_server_start(NULL, 0, &key, &srv, err, sizeof(err));
	explicit_bzero(&key, sizeof(key));
	if (st != WEFT_OK) {
		WT_ERROR("weft_get_unique_id: %s", err);
		goto out;
	}
	st = registry_add(srv);
	if (st != WEFT_OK) {
		WT_ERROR("weft_get_unique_id: this process already serves %d unique ids",
			 WT_EMBED_SERVERS_MAX);
		wt_boot_server_stop(srv);
		goto out;
	}
	id_encode(id, token, addr, wt_boot_server_port(srv));
	WT_INFO("weft_get_unique_id: rendezvous store at %s port %d", addr,
		wt_boot_server_port(srv));
out:
	explicit_bzero(token, sizeof(token));
	return st;
}

static weft_status_t check_init_args(weft_comm_t **comm, int nranks, const weft_unique_id_t *id,
				     int rank)
{
	if (comm != NULL)
		*comm = NULL;
	if (comm == NULL || id == NULL) {
		WT_ERROR("weft_comm_init_rank: %s is NULL", comm == NULL ? "comm" : "id");
		return WEFT_ERR_INVALID_ARG;
	}
	if (nranks < 1 || nranks > WT_EMBED_RANKS_MAX) {
		WT_ERROR("weft_comm_init_rank: nranks %d is not in [1, %d]", nranks,
			 WT_EMBED_RANKS_MAX);
		return WEFT_ERR_INVALID_ARG;
	}
	if (rank < 0 || rank >= nranks) {
		WT_ERROR("weft_comm_init_rank: rank %d is not in [0, %d)", rank, nranks);
		return WEFT_ERR_INVALID_ARG;
	}
	return WEFT_OK;
}

WEFT_API weft_status_t weft_comm_init_rank(weft_comm_t **comm, int nranks,
					   const weft_unique_id_t *id, int rank)
{
	char err[WT_API_ERR_LEN] = "";
	wt_api_ctx_t *ctx = NULL;
	wt_api_boot_t b;
	weft_status_t st;

	st = check_init_args(comm, nranks, id, rank);
	if (st != WEFT_OK)
		return st;
	if (wt_util_crypto_init() != WEFT_OK) {
		WT_ERROR("weft_comm_init_rank: libsodium failed to initialise");
		return WEFT_ERR_SYSTEM;
	}
	memset(&b, 0, sizeof(b));
	st = id_decode(id, &b, err, sizeof(err));
	if (st != WEFT_OK) {
		WT_ERROR("weft_comm_init_rank on rank %d: %s", rank, err);
		explicit_bzero(&b.key, sizeof(b.key));
		return st;
	}
	b.rank = rank;
	b.size = nranks;
	b.local_rank = -1;
	b.local_size = -1;
	b.start_server = 0;
	b.caller = "weft_comm_init_rank";
	st = wt_api_ctx_create_boot(&b, &ctx, err, sizeof(err));
	explicit_bzero(&b.key, sizeof(b.key));
	if (st != WEFT_OK)
		return st;
	return wt_api_world_comm(ctx, comm);
}
