/* The API context (layers/api): reads the launcher environment, runs the rendezvous,
 * opens links, wires the channel and owns the progress thread. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include "lib/util/env.h"
#include "lib/util/log.h"
#include "lib/util/stores.h"
#include "lib/util/time.h"
#include "layers/api/api_int.h"
#include "layers/channel/rel.h"

#define WT_API_BLOB_MAX (WT_LINK_ADDR_MAX + 64)

static void ctx_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void ctx_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* First of several variable names that is set; NULL if none. */
static const char *env_first(const char *const *names, const char **which)
{
	for (; *names != NULL; names++) {
		const char *v = wt_util_env_str(*names);
		if (v != NULL) {
			*which = *names;
			return v;
		}
	}
	return NULL;
}

static weft_status_t env_rank_var(const char *const *names, int64_t min, int64_t max, int64_t *out,
				  int *found, char *err, size_t errlen)
{
	const char *which = NULL;
	const char *v = env_first(names, &which);

	*found = 0;
	if (v == NULL)
		return WEFT_OK;
	if (wt_util_parse_int(v, min, max, out) != 0) {
		ctx_err(err, errlen, "%s='%s' is not an integer in [%lld, %lld]", which, v,
			(long long)min, (long long)max);
		return WEFT_ERR_INVALID_ARG;
	}
	*found = 1;
	return WEFT_OK;
}

/* RANK / WORLD_SIZE with Slurm and Open MPI fallbacks; neither set = a world of one.
 * LOCAL_RANK / LOCAL_WORLD_SIZE are taken when set; otherwise wire-up derives them from
 * the host identities, which is also what the embedding path does. */
static weft_status_t read_world(wt_api_boot_t *b, char *err, size_t errlen)
{
	static const char *const rank_vars[] = {"RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK",
						NULL};
	static const char *const size_vars[] = {"WORLD_SIZE", "SLURM_NTASKS",
						"OMPI_COMM_WORLD_SIZE", NULL};
	static const char *const lrank_vars[] = {"LOCAL_RANK", "SLURM_LOCALID",
						 "OMPI_COMM_WORLD_LOCAL_RANK", NULL};
	static const char *const lsize_vars[] = {"LOCAL_WORLD_SIZE", "SLURM_NTASKS_PER_NODE",
						 "OMPI_COMM_WORLD_LOCAL_SIZE", NULL};
	int64_t rank = 0, size = 1, lrank = 0, lsize = 1;
	int have_rank, have_size, have_lr, have_ls;
	weft_status_t st;

	st = env_rank_var(rank_vars, 0, 1 << 24, &rank, &have_rank, err, errlen);
	if (st == WEFT_OK)
		st = env_rank_var(size_vars, 1, 1 << 24, &size, &have_size, err, errlen);
	if (st == WEFT_OK)
		st = env_rank_var(lrank_vars, 0, 1 << 24, &lrank, &have_lr, err, errlen);
	if (st == WEFT_OK)
		st = env_rank_var(lsize_vars, 1, 1 << 24, &lsize, &have_ls, err, errlen);
	if (st != WEFT_OK)
		return st;
	if (have_rank != have_size) {
		ctx_err(err, errlen, "%s is set but %s is not: set both (as torchrun does)",
			have_rank ? "RANK" : "WORLD_SIZE", have_rank ? "WORLD_SIZE" : "RANK");
		return WEFT_ERR_INVALID_ARG;
	}
	if (rank >= size) {
		ctx_err(err, errlen, "RANK=%lld is not below WORLD_SIZE=%lld", (long long)rank,
			(long long)size);
		return WEFT_ERR_INVALID_ARG;
	}
	if (have_lr && have_ls && lrank >= lsize)
		lsize = lrank + 1;
	b->rank = (int)rank;
	b->size = (int)size;
	b->local_rank = have_lr ? (int)lrank : -1;
	b->local_size = have_ls ? (int)lsize : -1;
	return WEFT_OK;
}

/* Measured orders of magnitude on commodity hosts; WEFT_COST_* override them. */
static const wt_sched_cost_t cost_shm_default = {1.5e-6, 1 / 6e9, 1 / 8e9};
static const wt_sched_cost_t cost_tcp_default = {25e-6, 1 / 1.5e9, 1 / 8e9};

/* One number of a cost triple: finite, in [min, max]; *p moves past it. */
static int parse_cost_field(const char **p, double min, double max, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(*p, &end);
	if (end == *p || errno != 0 || !isfinite(v) || v < min || v > max)
		return -1;
	*out = v;
	*p = end;
	return 0;
}

/* WEFT_COST_<CLASS>="alpha_us,GB/s,reduce_GB/s", e.g. "1.5,6,8"; *given (when not NULL)
 * says whether the variable was set (else *out is def). */
static weft_status_t read_cost(const char *name, const wt_sched_cost_t *def, wt_sched_cost_t *out,
			       int *given, char *err, size_t errlen)
{
	const char *s = wt_util_env_str(name);
	const char *p = s;
	double us, bw, rbw;

	*out = *def;
	if (given != NULL)
		*given = s != NULL && s[0] != '\0';
	if (s == NULL || s[0] == '\0')
		return WEFT_OK;
	if (parse_cost_field(&p, 0, 1e6, &us) != 0 || *p++ != ',' ||
	    parse_cost_field(&p, 1e-6, 1e6, &bw) != 0 || *p++ != ',' ||
	    parse_cost_field(&p, 1e-6, 1e6, &rbw) != 0 || *p != '\0') {
		ctx_err(err, errlen,
			"%s='%.60s' is not \"alpha_us,GB/s,reduce_GB/s\" (alpha in [0, 1e6] us, "
			"rates in [1e-6, 1e6] GB/s), e.g. \"1.5,6,8\"",
			name, s);
		return WEFT_ERR_INVALID_ARG;
	}
	out->alpha = us * 1e-6;
	out->beta = 1 / (bw * 1e9);
	out->gamma = 1 / (rbw * 1e9);
	return WEFT_OK;
}

static weft_status_t read_algo(wt_api_config_t *c, char *err, size_t errlen)
{
	const char *s = wt_util_env_str("WEFT_ALGO");
	char why[256] = "";

	if (s == NULL)
		return WEFT_OK;
	if (strlen(s) >= sizeof(c->algo)) {
		ctx_err(err, errlen, "WEFT_ALGO='%.40s...' is too long (at most %zu characters)", s,
			sizeof(c->algo) - 1);
		return WEFT_ERR_INVALID_ARG;
	}
	if (wt_sched_algo_spec_check(s, why, sizeof(why)) != WEFT_OK) {
		ctx_err(err, errlen, "WEFT_ALGO='%s' is invalid: %s", s, why);
		return WEFT_ERR_INVALID_ARG;
	}
	snprintf(c->algo, sizeof(c->algo), "%s", s);
	return WEFT_OK;
}

wt_sched_cost_t wt_api_comm_cost(const wt_api_ctx_t *ctx, const int *world, int size)
{
	for (int r = 0; r < size; r++) {
		int li = ctx->peer_link != NULL ? ctx->peer_link[world[r]] : -1;
		if (li >= 0 && strcmp(ctx->link_names[li], "shm") != 0)
			return ctx->cfg.cost_tcp;
	}
	return ctx->cfg.cost_shm;
}

/* The built drivers as "shm, tcp, udp" (after prefix, when given). */
static void built_links(char *buf, size_t len, const char *prefix)
{
	snprintf(buf, len, "%s", prefix);
	for (const wt_link_ops_t *const *o = wt_link_all(); *o != NULL; o++)
		snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", buf[0] != '\0' ? ", " : "",
			 (*o)->name);
}

/* One driver name of WEFT_LINKS=LOCAL,REMOTE (len bytes at p): built, and not shm for
 * REMOTE. */
static weft_status_t links_part(const char *spec, const char *p, size_t len, int remote, char *out,
				size_t cap, char *err, size_t errlen)
{
	const char *role = remote ? "remote" : "local";
	char names[128];

	if (len == 0 || len >= cap) {
		ctx_err(err, errlen,
			"WEFT_LINKS='%s': the %s driver is %s; use DRIVER or LOCAL,REMOTE (e.g. "
			"shm,tcp)",
			spec, role, len == 0 ? "missing" : "too long");
		return WEFT_ERR_INVALID_ARG;
	}
	memcpy(out, p, len);
	out[len] = '\0';
	if (wt_link_find(out) == NULL) {
		built_links(names, sizeof(names), "");
		ctx_err(err, errlen, "WEFT_LINKS='%s': the %s driver '%s' is not one of %s", spec,
			role, out, names);
		return WEFT_ERR_INVALID_ARG;
	}
	if (remote && strcmp(out, "shm") == 0) {
		ctx_err(err, errlen,
			"WEFT_LINKS='%s': shm cannot reach other hosts, so it cannot be the remote "
			"driver (the second name)",
			spec);
		return WEFT_ERR_INVALID_ARG;
	}
	return WEFT_OK;
}

/* WEFT_LINKS: auto (= shm,tcp), one driver for every pair, or LOCAL,REMOTE: one driver
 * between ranks of a host and one between hosts. */
static weft_status_t read_links(wt_api_config_t *c, char *err, size_t errlen)
{
	const char *s = wt_util_env_str("WEFT_LINKS");
	const char *comma;
	char names[128];
	weft_status_t st;

	if (s == NULL)
		s = "auto";
	if (strlen(s) >= sizeof(c->links)) {
		ctx_err(err, errlen, "WEFT_LINKS='%.40s...' is too long (at most %zu characters)",
			s, sizeof(c->links) - 1);
		return WEFT_ERR_INVALID_ARG;
	}
	snprintf(c->links, sizeof(c->links), "%s", s);
	comma = strchr(s, ',');
	if (strcmp(s, "auto") == 0) {
		snprintf(c->link_local, sizeof(c->link_local), "shm");
		snprintf(c->link_remote, sizeof(c->link_remote), "tcp");
		return WEFT_OK;
	}
	if (comma == NULL) {
		if (wt_link_find(s) == NULL) {
			built_links(names, sizeof(names), "auto");
			ctx_err(err, errlen, "WEFT_LINKS='%s' is not one of %s, or LOCAL,REMOTE", s,
				names);
			return WEFT_ERR_INVALID_ARG;
		}
		snprintf(c->link_local, sizeof(c->link_local), "%s", s);
		snprintf(c->link_remote, sizeof(c->link_remote), "%s", s);
		return WEFT_OK;
	}
	if (strchr(comma + 1, ',') != NULL) {
		ctx_err(err, errlen,
			"WEFT_LINKS='%s' names more than two drivers; use DRIVER or LOCAL,REMOTE",
			s);
		return WEFT_ERR_INVALID_ARG;
	}
	st = links_part(s, s, (size_t)(comma - s), 0, c->link_local, sizeof(c->link_local), err,
			errlen);
	if (st == WEFT_OK)
		st = links_part(s, comma + 1, strlen(comma + 1), 1, c->link_remote,
				sizeof(c->link_remote), err, errlen);
	return st;
}

static weft_status_t read_config(wt_api_config_t *c, char *err, size_t errlen)
{
	weft_status_t st;
	int64_t v;
	const char *s;

	memset(c, 0, sizeof(*c));
	st = wt_util_env_seconds("WEFT_TIMEOUT", 600, 0.001, 1e9, &c->timeout, err, errlen);
	if (st != WEFT_OK)
		return st;
	st = wt_util_env_seconds("WEFT_CONNECT_TIMEOUT", 60, 0.001, 1e9, &c->connect_timeout, err,
				 errlen);
	if (st != WEFT_OK)
		return st;
	st = read_links(c, err, errlen);
	if (st != WEFT_OK)
		return st;
	char why[200];

	st = wt_fault_parse(wt_util_env_str("WEFT_FAULT"), &c->fault, why, sizeof(why));
	if (st != WEFT_OK) {
		ctx_err(err, errlen, "WEFT_FAULT is invalid: %s", why);
		return st;
	}
	st = read_algo(c, err, errlen);
	if (st == WEFT_OK)
		st = read_cost("WEFT_COST_SHM", &cost_shm_default, &c->cost_shm, &c->cost_shm_set,
			       err, errlen);
	if (st == WEFT_OK)
		st = read_cost("WEFT_COST_TCP", &cost_tcp_default, &c->cost_tcp, NULL, err, errlen);
	if (st != WEFT_OK)
		return st;
	st = wt_util_env_int("WEFT_SEG_SIZE", 0, 0, (int64_t)1 << 30, &v, err, errlen);
	if (st != WEFT_OK)
		return st;
	if (v != 0 && v < 64) {
		ctx_err(err, errlen, "WEFT_SEG_SIZE=%lld is below the minimum of 64 bytes",
			(long long)v);
		return WEFT_ERR_INVALID_ARG;
	}
	c->seg_bytes = (size_t)v;
	st = wt_util_env_int("WEFT_EAGER_LIMIT", 0, 0, 1 << 20, &v, err, errlen);
	if (st != WEFT_OK)
		return st;
	c->eager_limit = (size_t)v;
	st = wt_util_env_bool("WEFT_PROGRESS_THREAD", 1, &c->progress_thread, err, errlen);
	if (st != WEFT_OK)
		return st;
	s = wt_util_env_str("WEFT_COMPRESS");
	if (s != NULL) {
		int cm = wt_sched_compress_from_name(s);
		if (cm < 0) {
			ctx_err(err, errlen, "WEFT_COMPRESS='%.40s' is not one of none, bf16, fp16",
				s);
			return WEFT_ERR_INVALID_ARG;
		}
		c->compress = cm;
	}
	/* Read by the shm links too; checked here so every rank refuses a bad value before the
	 * rendezvous, as every other setting. */
	st = wt_util_stores_setting(&c->shm_stores, err, errlen);
	if (st != WEFT_OK)
		return st;
	{
		int membarrier;

		st = wt_util_env_bool("WEFT_SHM_MEMBARRIER", 1, &membarrier, err, errlen);
		if (st != WEFT_OK)
			return st;
	}
	st = wt_util_env_int("WEFT_SPIN_US", 1000, 0, 1000000, &v, err, errlen);
	if (st != WEFT_OK)
		return st;
	c->spin_us = (int)v;
	st = wt_util_env_int("WEFT_YIELD_US", 200, 0, 1000000, &v, err, errlen);
	if (st != WEFT_OK)
		return st;
	c->yield_us = (int)v;
	st = wt_util_env_int("WEFT_XCORE_SPIN_US", 4, 0, 1000, &v, err, errlen);
	if (st != WEFT_OK)
		return st;
	c->xcore_spin_us = (int)v;
	return wt_util_env_bool("WEFT_CHECK", 0, &c->check, err, errlen);
}

/* Same host = same boot id, hostname and network namespace, unless WEFT_HOST_ID says
 * otherwise: ranks in different namespaces (simulated hosts) must not share memory
 * rings, and shm's doorbells (abstract unix sockets) do not cross namespaces anyway. */
static void host_identity(char *buf, size_t len)
{
	const char *forced = wt_util_env_str("WEFT_HOST_ID");
	char host[256] = "";
	char boot[64] = "";
	char netns[64] = "";
	ssize_t n;
	FILE *f;

	if (forced != NULL) {
		snprintf(buf, len, "id:%s", forced);
		return;
	}
	gethostname(host, sizeof(host) - 1);
	f = fopen("/proc/sys/kernel/random/boot_id", "r");
	if (f != NULL) {
		if (fgets(boot, sizeof(boot), f) == NULL)
			boot[0] = '\0';
		fclose(f);
	}
	boot[strcspn(boot, "\n")] = '\0';
	/* "net:[4026531840]": the namespace's inode, unique while it exists. */
	n = readlink("/proc/self/ns/net", netns, sizeof(netns) - 1);
	netns[n > 0 ? n : 0] = '\0';
	snprintf(buf, len, "host:%s/%s/%s", host, boot, netns);
}

static weft_status_t store_get_str(wt_api_ctx_t *ctx, const char *key, char *buf, size_t cap,
				   char *err, size_t errlen)
{
	size_t len = 0;
	weft_status_t st;

	st = wt_boot_store_get(ctx->store, key, buf, cap - 1, &len, ctx->cfg.connect_timeout);
	if (st != WEFT_OK) {
		ctx_err(err, errlen, "rendezvous: reading '%s' from the store failed: %s (%s)", key,
			weft_strerror(st), wt_boot_store_error(ctx->store));
		return st;
	}
	buf[len] = '\0';
	return WEFT_OK;
}

/* MASTER_ADDR / MASTER_PORT / WEFT_JOB_TOKEN: where the store is and how to prove the
 * job to it; rank 0 serves it. */
static weft_status_t read_store(wt_api_boot_t *b, char *err, size_t errlen)
{
	const char *addr = wt_util_env_str("MASTER_ADDR");
	const char *token = wt_util_env_str("WEFT_JOB_TOKEN");
	int64_t port = 29500;
	weft_status_t st;
	char fallback[320];

	if (addr == NULL)
		addr = "127.0.0.1";
	if (strlen(addr) >= sizeof(b->host)) {
		ctx_err(err, errlen, "MASTER_ADDR='%.40s...' is too long", addr);
		return WEFT_ERR_INVALID_ARG;
	}
	st = wt_util_env_int("MASTER_PORT", 29500, 1, 65535, &port, err, errlen);
	if (st != WEFT_OK)
		return st;
	if (token == NULL) {
		/* torchrun does not set a token: fall back to one every rank can derive, and
		 * say that it is not a secret. */
		snprintf(fallback, sizeof(fallback), "weft-no-token:%s:%lld:%d", addr,
			 (long long)port, b->size);
		token = fallback;
		if (b->rank == 0 && b->size > 1)
			WT_WARN("WEFT_JOB_TOKEN is not set: connections are authenticated "
				"with a token derived from MASTER_ADDR/PORT, which is no secret");
	}
	wt_util_key_from_token(&b->key, token);
	snprintf(b->host, sizeof(b->host), "%s", addr);
	b->port = (int)port;
	b->start_server = b->rank == 0;
	return WEFT_OK;
}

weft_status_t wt_api_boot_from_env(wt_api_boot_t *b, char *err, size_t errlen)
{
	weft_status_t st;

	memset(b, 0, sizeof(*b));
	b->caller = "weft_init";
	st = wt_util_crypto_init();
	if (st != WEFT_OK) {
		ctx_err(err, errlen, "libsodium failed to initialise");
		return st;
	}
	st = read_world(b, err, errlen);
	if (st == WEFT_OK)
		st = read_store(b, err, errlen);
	return st;
}

static weft_status_t rendezvous_connect(wt_api_ctx_t *ctx, const wt_api_boot_t *b, char *err,
					size_t errlen)
{
	weft_status_t st;

	if (b->start_server) {
		st = wt_boot_server_start(NULL, b->port, &ctx->key, &ctx->server, err, errlen);
		if (st != WEFT_OK)
			return st;
	}
	return wt_boot_store_connect(b->host, b->port, &ctx->key, ctx->cfg.connect_timeout,
				     &ctx->store, err, errlen);
}

/* Which link carries traffic between two ranks; the same answer on both sides. */
static const char *link_for(const wt_api_ctx_t *ctx, const char *my_host, const char *peer_host)
{
	return strcmp(my_host, peer_host) == 0 ? ctx->cfg.link_local : ctx->cfg.link_remote;
}

static int link_index(wt_api_ctx_t *ctx, const char *name)
{
	for (int i = 0; i < ctx->nlinks; i++) {
		if (strcmp(ctx->link_names[i], name) == 0)
			return i;
	}
	return -1;
}

static weft_status_t wrap_link(wt_api_ctx_t *ctx, int i, char *err, size_t errlen);

static weft_status_t open_link(wt_api_ctx_t *ctx, const char *name, const char *bind_ip, char *err,
			       size_t errlen)
{
	const wt_link_ops_t *ops = wt_link_find(name);
	wt_link_config_t lc;
	char why[256] = "";
	weft_status_t st;
	wt_link_t *link = NULL;

	if (ops == NULL) {
		ctx_err(err, errlen, "link driver '%s' is not built into this library", name);
		return WEFT_ERR_UNSUPPORTED;
	}
	if (ops->size != sizeof(wt_link_ops_t)) {
		ctx_err(err, errlen, "link driver '%s' has a mismatched ops table", name);
		return WEFT_ERR_UNSUPPORTED;
	}
	st = ops->probe(why, sizeof(why));
	if (st != WEFT_OK) {
		ctx_err(err, errlen, "link driver '%s' cannot run here: %s", name, why);
		return st;
	}
	memset(&lc, 0, sizeof(lc));
	lc.rank = ctx->rank;
	lc.size = ctx->size;
	lc.job_id = ctx->job_id;
	lc.key = ctx->key;
	lc.connect_timeout = ctx->cfg.connect_timeout;
	lc.bind_addr = bind_ip;
	lc.host_id = ctx->host_id;
	lc.local_size = ctx->local_size;
	st = ops->open(&lc, &link);
	if (st != WEFT_OK) {
		ctx_err(err, errlen, "opening link driver '%s' failed: %s", name,
			weft_strerror(st));
		return st;
	}
	int i = ctx->nlinks++;

	ctx->link_names[i] = ops->name;
	ctx->link_stack[i][0] = link;
	ctx->stack_depth[i] = 1;
	ctx->links[i] = link;
	return wrap_link(ctx, i, err, errlen);
}

/* Stack the fault injector (WEFT_FAULT) and, when what is below is not reliable, the
 * channel's reliability protocol on link i. */
static weft_status_t wrap_link(wt_api_ctx_t *ctx, int i, char *err, size_t errlen)
{
	wt_link_t *top = ctx->links[i];
	weft_status_t st;

	if (ctx->cfg.fault.enabled) {
		st = wt_fault_wrap(top, &ctx->cfg.fault, ctx->rank, &top);
		if (st != WEFT_OK) {
			ctx_err(err, errlen, "link '%s': setting up WEFT_FAULT failed: %s",
				ctx->link_names[i], weft_strerror(st));
			return st;
		}
		ctx->link_stack[i][ctx->stack_depth[i]++] = top;
	}
	if (!(wt_link_ops(top)->caps & WT_LINK_CAP_RELIABLE)) {
		wt_rel_config_t rc;

		memset(&rc, 0, sizeof(rc));
		rc.rank = ctx->rank;
		rc.size = ctx->size;
		rc.key = ctx->key;
		st = wt_rel_wrap(top, &rc, &top);
		if (st != WEFT_OK) {
			ctx_err(err, errlen, "link '%s': starting the reliability layer failed: %s",
				ctx->link_names[i], weft_strerror(st));
			return st;
		}
		ctx->link_stack[i][ctx->stack_depth[i]++] = top;
	}
	ctx->links[i] = top;
	return WEFT_OK;
}

/* Every rank must agree on the size, and a rendezvous serves one communicator: a rank
 * count or a reused unique id that does not fit fails fast instead of hanging. */
static weft_status_t check_membership(wt_api_ctx_t *ctx, const wt_api_boot_t *b, char *err,
				      size_t errlen)
{
	char val[24], mine[24];
	int64_t n = 0;
	weft_status_t st;

	snprintf(mine, sizeof(mine), "%d", ctx->size);
	st = wt_boot_store_add(ctx->store, "boot/joined", 1, &n);
	if (st == WEFT_OK && ctx->rank == 0)
		st = wt_boot_store_set(ctx->store, "boot/size", mine, strlen(mine));
	if (st != WEFT_OK) {
		ctx_err(err, errlen, "rendezvous: writing to the store failed: %s (%s)",
			weft_strerror(st), wt_boot_store_error(ctx->store));
		return st;
	}
	if (n > ctx->size) {
		ctx_err(err, errlen, "rendezvous: %lld ranks joined a world of %d: %s",
			(long long)n, ctx->size,
			b->start_server ? "two ranks share a RANK, or the store is left over"
					: "a unique id serves one communicator; get a new one");
		return WEFT_ERR_INVALID_ARG;
	}
	st = store_get_str(ctx, "boot/size", val, sizeof(val), err, errlen);
	if (st != WEFT_OK)
		return st;
	if (strcmp(val, mine) != 0) {
		ctx_err(err, errlen, "rendezvous: rank 0 has a world of %.20s ranks, this rank %d",
			val, ctx->size);
		return WEFT_ERR_MISMATCH;
	}
	return WEFT_OK;
}

/* Ranks with the same host identity are local to each other, numbered by world rank;
 * the launcher's LOCAL_RANK / LOCAL_WORLD_SIZE win where it set them. */
static void derive_local(wt_api_ctx_t *ctx, const wt_api_boot_t *b, const char *me,
			 char (*hosts)[WT_API_HOSTID_MAX])
{
	int lrank = 0, lsize = 0;

	for (int r = 0; r < ctx->size; r++) {
		if (strcmp(hosts[r], me) != 0)
			continue;
		lsize++;
		if (r < ctx->rank)
			lrank++;
	}
	ctx->local_rank = b->local_rank >= 0 ? b->local_rank : lrank;
	ctx->local_size = b->local_size >= 0 ? b->local_size : lsize;
	if (ctx->local_rank >= ctx->local_size)
		ctx->local_size = ctx->local_rank + 1;
}

/* Publish host id, agree on a job id, open the links this rank needs, exchange addresses
 * and start connecting. */
static weft_status_t wire_up(wt_api_ctx_t *ctx, const wt_api_boot_t *b, char *err, size_t errlen)
{
	char key[64], ip[64];
	const char *me = ctx->host_id;
	char(*hosts)[WT_API_HOSTID_MAX] = NULL;
	unsigned char blob[WT_API_BLOB_MAX];
	weft_status_t st;
	int r;

	host_identity(ctx->host_id, sizeof(ctx->host_id));
	st = check_membership(ctx, b, err, errlen);
	if (st != WEFT_OK)
		return st;
	if (ctx->rank == 0) {
		char id[17];
		wt_util_random_hex(id, 8);
		st = wt_boot_store_set(ctx->store, "job", id, strlen(id));
		if (st != WEFT_OK)
			goto store_fail;
	}
	st = store_get_str(ctx, "job", ctx->job_id, sizeof(ctx->job_id), err, errlen);
	if (st != WEFT_OK)
		return st;
	snprintf(key, sizeof(key), "host/%d", ctx->rank);
	st = wt_boot_store_set(ctx->store, key, me, strlen(me));
	if (st != WEFT_OK)
		goto store_fail;
	hosts = calloc((size_t)ctx->size, sizeof(*hosts));
	ctx->peer_link = calloc((size_t)ctx->size, sizeof(int));
	if (hosts == NULL || ctx->peer_link == NULL) {
		free(hosts);
		ctx_err(err, errlen, "out of memory for %d peers", ctx->size);
		return WEFT_ERR_NO_MEMORY;
	}
	for (r = 0; r < ctx->size; r++) {
		snprintf(key, sizeof(key), "host/%d", r);
		st = store_get_str(ctx, key, hosts[r], sizeof(hosts[r]), err, errlen);
		if (st != WEFT_OK)
			goto out;
	}
	derive_local(ctx, b, me, hosts);
	WT_INFO("rank %d is local rank %d of %d on host %s", ctx->rank, ctx->local_rank,
		ctx->local_size, me);
	if (wt_boot_store_local_ip(ctx->store, ip, sizeof(ip)) != WEFT_OK)
		snprintf(ip, sizeof(ip), "127.0.0.1");
	/* Open each link kind some peer needs. */
	for (r = 0; r < ctx->size; r++) {
		const char *name;
		ctx->peer_link[r] = -1;
		if (r == ctx->rank)
			continue;
		name = link_for(ctx, me, hosts[r]);
		if (strcmp(name, "shm") == 0 && strcmp(me, hosts[r]) != 0) {
			ctx_err(err, errlen,
				"WEFT_LINKS=shm but rank %d is on another host (%s, we are %s)", r,
				hosts[r], me);
			st = WEFT_ERR_INVALID_ARG;
			goto out;
		}
		if (link_index(ctx, name) < 0) {
			st = open_link(ctx, name, ip, err, errlen);
			if (st != WEFT_OK)
				goto out;
		}
		ctx->peer_link[r] = link_index(ctx, name);
		WT_INFO("rank %d reaches rank %d over %s", ctx->rank, r, name);
	}
	for (int i = 0; i < ctx->nlinks; i++) {
		size_t len = sizeof(blob);
		wt_link_t *l = ctx->links[i];
		st = wt_link_ops(l)->address(l, blob, &len);
		if (st != WEFT_OK) {
			ctx_err(err, errlen, "link '%s': no local address: %s", ctx->link_names[i],
				weft_strerror(st));
			goto out;
		}
		snprintf(key, sizeof(key), "addr/%s/%d", ctx->link_names[i], ctx->rank);
		st = wt_boot_store_set(ctx->store, key, blob, len);
		if (st != WEFT_OK)
			goto store_fail_out;
	}
	for (r = 0; r < ctx->size; r++) {
		size_t len = 0;
		int li = ctx->peer_link[r];
		wt_link_t *l;
		if (li < 0)
			continue;
		l = ctx->links[li];
		snprintf(key, sizeof(key), "addr/%s/%d", ctx->link_names[li], r);
		st = wt_boot_store_get(ctx->store, key, blob, sizeof(blob), &len,
				       ctx->cfg.connect_timeout);
		if (st != WEFT_OK) {
			ctx_err(err, errlen, "rendezvous: no %s address from rank %d: %s (%s)",
				ctx->link_names[li], r, weft_strerror(st),
				wt_boot_store_error(ctx->store));
			goto out;
		}
		st = wt_link_ops(l)->connect(l, r, blob, len);
		if (st != WEFT_OK) {
			ctx_err(err, errlen, "link '%s': connecting to rank %d failed: %s",
				ctx->link_names[li], r, weft_strerror(st));
			goto out;
		}
		st = wt_chan_set_link(ctx->chan, r, l);
		if (st != WEFT_OK) {
			ctx_err(err, errlen, "channel: routing rank %d failed: %s", r,
				weft_strerror(st));
			goto out;
		}
	}
	st = WEFT_OK;
	goto out;
store_fail_out:
	free(hosts);
	hosts = NULL;
store_fail:
	ctx_err(err, errlen, "rendezvous: writing to the store failed: %s (%s)", weft_strerror(st),
		wt_boot_store_error(ctx->store));
	return st;
out:
	free(hosts);
	return st;
}

/* Every rank has wired up before any leaves init, so that no rank's first message meets a
 * peer that has not opened its links yet, and rank 0's store outlives everyone's reads. */
static weft_status_t init_barrier(wt_api_ctx_t *ctx, char *err, size_t errlen)
{
	int64_t n = 0;
	char buf[8];
	weft_status_t st;

	st = wt_boot_store_add(ctx->store, "init/arrived", 1, &n);
	if (st == WEFT_OK && n == ctx->size)
		st = wt_boot_store_set(ctx->store, "init/done", "1", 1);
	if (st != WEFT_OK) {
		ctx_err(err, errlen, "rendezvous barrier failed: %s (%s)", weft_strerror(st),
			wt_boot_store_error(ctx->store));
		return st;
	}
	return store_get_str(ctx, "init/done", buf, sizeof(buf), err, errlen);
}

static void kick_epoll(wt_api_ctx_t *ctx)
{
	uint64_t one = 1;

	if (write(ctx->wake_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		WT_DEBUG("writing the wake fd failed: %s", strerror(errno));
}

static void unpark(wt_api_ctx_t *ctx)
{
	if (!ctx->thread_started)
		return;
	pthread_mutex_lock(&ctx->lock);
	ctx->unpark = 1;
	pthread_cond_signal(&ctx->park_cv);
	pthread_mutex_unlock(&ctx->lock);
}

void wt_api_wake(wt_api_ctx_t *ctx)
{
	if (ctx->wake_fd < 0)
		return;
	if (atomic_load(&ctx->in_epoll))
		kick_epoll(ctx);
	/* Unconditionally: a thread about to park would miss a flag read here. Cheap: the
	 * signal makes no system call when no one waits on park_cv. */
	if (atomic_load(&ctx->waiters) == 0)
		unpark(ctx);
}

void wt_api_async_started(wt_api_ctx_t *ctx)
{
	atomic_store_explicit(&ctx->last_async_ns, wt_util_time_ns(), memory_order_relaxed);
	/* A thread that sleeps short took the lock after we linked the request, or will
	 * look again within WT_API_ASYNC_LAZY_US: either way it sees it. Waking it for every
	 * start cost a context switch on a core the ranks use (2 ranks, 64 B allreduce, 4 in
	 * flight: 5-8 us a call woken, 0.65 not). */
	if (!atomic_load(&ctx->thread_short))
		wt_api_wake(ctx);
}

void wt_api_waiter_enter(wt_api_ctx_t *ctx)
{
	atomic_fetch_add(&ctx->waiters, 1);
	/* Pairs with progress_sleep(): either it sees the waiter or we see it in epoll. A
	 * thread left in epoll would take the doorbells' wake-ups from the caller. */
	if (atomic_load(&ctx->thread_epoll) && ctx->wake_fd >= 0)
		kick_epoll(ctx);
}

void wt_api_waiter_exit(wt_api_ctx_t *ctx)
{
	/* Requests nobody waits for (async ones), or frames still queued for a link (a send
	 * that completed held), need the progress thread back now; otherwise it stays parked
	 * until its next tick, so a loop of blocking calls never wakes it. */
	if (atomic_fetch_sub(&ctx->waiters, 1) == 1 &&
	    (atomic_load(&ctx->active) > 0 || atomic_load(&ctx->backlog)))
		unpark(ctx);
}

int wt_api_progress_locked(wt_api_ctx_t *ctx)
{
	int n;

	if (ctx->chan == NULL)
		return 0;
	n = wt_chan_progress(ctx->chan);
	atomic_store_explicit(&ctx->backlog, wt_chan_backlog(ctx->chan), memory_order_relaxed);
	return n;
}

static void drain_wake_fd(wt_api_ctx_t *ctx)
{
	uint64_t v;

	if (read(ctx->wake_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		WT_DEBUG("draining the wake fd failed: %s", strerror(errno));
}

/* epoll_wait without the lock; 1 if the wake fd was among the ready ones. */
static int epoll_sleep(wt_api_ctx_t *ctx, int timeout_ms)
{
	struct epoll_event ev[8];
	int n = epoll_wait(ctx->epfd, ev, 8, timeout_ms);

	if (n < 0 && errno != EINTR)
		WT_WARN("epoll_wait on the links failed: %s", strerror(errno));
	for (int i = 0; i < n; i++) {
		if (ev[i].data.fd == ctx->wake_fd)
			return 1;
	}
	return 0;
}

void wt_api_sleep_fds_locked(wt_api_ctx_t *ctx, int timeout_ms)
{
	int pending, woke = 0;

	if (ctx->chan == NULL || ctx->epfd < 0) {
		pthread_mutex_unlock(&ctx->lock);
		wt_util_sleep_ns((uint64_t)timeout_ms * 1000000ull);
		pthread_mutex_lock(&ctx->lock);
		return;
	}
	/* The links' own timers (retransmissions, delayed frames) bound the sleep. */
	int tm = wt_chan_timer_ms(ctx->chan);

	if (tm >= 0 && tm < timeout_ms)
		timeout_ms = tm;
	pending = wt_chan_arm(ctx->chan);
	/* Set under the lock: whoever completes or aborts a request under it afterwards sees
	 * us and rings the wake fd. */
	atomic_fetch_add(&ctx->in_epoll, 1);
	pthread_mutex_unlock(&ctx->lock);
	if (!pending)
		woke = epoll_sleep(ctx, timeout_ms);
	else
		/* Output is queued behind a full link: nothing will ring for it, so back off
		 * briefly instead of sleeping on the fds. */
		wt_util_sleep_ns(20000);
	atomic_fetch_sub(&ctx->in_epoll, 1);
	if (woke)
		drain_wake_fd(ctx);
	pthread_mutex_lock(&ctx->lock);
	/* The links' sleeping flags are the process's, not this thread's: while another
	 * thread still sleeps on the fds (the progress thread and a caller can), clearing them
	 * would leave it with no doorbell (measured: 100 ms stalls after weft_init). The last
	 * one out disarms. */
	if (atomic_load(&ctx->in_epoll) == 0)
		wt_chan_disarm(ctx->chan);
}

/* The progress thread's sleep on the fds, unless a caller has started waiting: then it
 * must leave the fds to that caller. A caller that started waiting while we slept may be
 * in epoll_wait beside us; epoll wakes one waiter per event, and if that was us (we have
 * drained the doorbell on the way out), the caller would sleep on to its timeout (100 ms
 * after weft_init, measured): so we do the progress we were woken for and kick the
 * caller's epoll. Lock held. */
static void progress_sleep(wt_api_ctx_t *ctx, int timeout_ms)
{
	atomic_store(&ctx->thread_epoll, 1);
	if (atomic_load(&ctx->waiters) == 0) {
		wt_api_sleep_fds_locked(ctx, timeout_ms);
		if (atomic_load(&ctx->waiters) > 0 && atomic_load(&ctx->in_epoll) > 0) {
			wt_api_progress_locked(ctx);
			kick_epoll(ctx);
		}
	}
	atomic_store(&ctx->thread_epoll, 0);
}

/* While callers wait they drive progress (and heartbeats) themselves; the thread ticks
 * every 100 ms in case they stop without telling it, or after short_us if not 0 (async
 * requests started lately, which it must not leave behind for long). Lock held. */
static void progress_park(wt_api_ctx_t *ctx, uint32_t short_us)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += short_us ? (long)short_us * 1000L : 100000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	atomic_store(&ctx->parked, 1);
	atomic_store(&ctx->thread_short, short_us != 0);
	while (!ctx->unpark && !atomic_load(&ctx->stop) &&
	       pthread_cond_timedwait(&ctx->park_cv, &ctx->lock, &ts) == 0)
		;
	atomic_store(&ctx->thread_short, 0);
	atomic_store(&ctx->parked, 0);
}

/* Whether an async request was started within WT_API_ASYNC_RECENT_MS (recent) and within
 * WT_API_ASYNC_LAZY_US (its caller may still come back for it). */
static int async_since(const wt_api_ctx_t *ctx, uint64_t now, uint64_t within_ns)
{
	uint64_t last = atomic_load_explicit(&ctx->last_async_ns, memory_order_relaxed);

	return last != 0 && now - last < within_ns;
}

static int async_recent(const wt_api_ctx_t *ctx, uint64_t now)
{
	return async_since(ctx, now, WT_API_ASYNC_RECENT_MS * 1000000ull);
}

static uint32_t lazy_backoff(uint32_t us)
{
	return us * 2 > WT_API_ASYNC_LAZY_MAX_US ? WT_API_ASYNC_LAZY_MAX_US : us * 2;
}

static void *progress_main(void *arg)
{
	wt_api_ctx_t *ctx = arg;
	uint64_t last_work = wt_util_time_ns();
	/* The thread spins far less than a waiter: it competes with the caller's own
	 * computation, which is what async requests are for. */
	uint64_t spin_ns = (uint64_t)(ctx->cfg.spin_us < 20 ? ctx->cfg.spin_us : 20) * 1000;
	int parked_last = 0;
	/* How long it parks while async requests are recent and a caller drives: from
	 * WT_API_ASYNC_LAZY_US, doubled each time it finds the caller still waiting (each
	 * look takes a core from a rank), back to the start when it finds none. */
	uint32_t lazy_us = WT_API_ASYNC_LAZY_US;

	pthread_mutex_lock(&ctx->lock);
	while (!atomic_load(&ctx->stop)) {
		int n;
		uint64_t now;

		/* A waiting caller drives; after it leaves the thread stays parked for one
		 * tick unless async work calls it back, so back-to-back blocking calls never
		 * have to wake it. */
		if (!ctx->unpark && (atomic_load(&ctx->waiters) > 0 || parked_last)) {
			int recent = async_recent(ctx, wt_util_time_ns());

			parked_last = atomic_load(&ctx->waiters) > 0;
			progress_park(ctx, recent ? lazy_us : 0);
			if (recent && atomic_load(&ctx->waiters) > 0)
				lazy_us = lazy_backoff(lazy_us);
			else
				lazy_us = WT_API_ASYNC_LAZY_US;
			continue;
		}
		ctx->unpark = 0;
		parked_last = 0;
		n = wt_api_progress_locked(ctx);
		if (n > 0) {
			last_work = wt_util_time_ns();
			/* A caller that started waiting while we were in epoll may sleep there
			 * now, after we took the doorbell that completed its request. */
			if (atomic_load(&ctx->waiters) > 0 && atomic_load(&ctx->in_epoll) > 0)
				kick_epoll(ctx);
			/* Let callers (and abort) take the lock between rounds. */
			pthread_mutex_unlock(&ctx->lock);
			pthread_mutex_lock(&ctx->lock);
			continue;
		}
		/* Async requests started lately: unless their caller has left one for longer
		 * than WT_API_ASYNC_LAZY_US, look again after that (backing off while none is
		 * in flight), not on the fds. */
		now = wt_util_time_ns();
		if (async_recent(ctx, now)) {
			if (atomic_load(&ctx->active) == 0) {
				progress_park(ctx, lazy_us);
				lazy_us = lazy_backoff(lazy_us);
				continue;
			}
			if (async_since(ctx, now, WT_API_ASYNC_LAZY_US * 1000ull)) {
				progress_park(ctx, WT_API_ASYNC_LAZY_US);
				continue;
			}
		}
		lazy_us = WT_API_ASYNC_LAZY_US;
		if (!ctx->oversubscribed && atomic_load(&ctx->active) > 0 &&
		    now - last_work < spin_ns) {
			pthread_mutex_unlock(&ctx->lock);
			sched_yield();
			pthread_mutex_lock(&ctx->lock);
			continue;
		}
		progress_sleep(ctx, 100);
	}
	pthread_mutex_unlock(&ctx->lock);
	return NULL;
}

static weft_status_t start_progress(wt_api_ctx_t *ctx, char *err, size_t errlen)
{
	struct epoll_event ev;
	int fds[16];
	int n;

	ctx->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ctx->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (ctx->wake_fd < 0 || ctx->epfd < 0) {
		ctx_err(err, errlen, "progress engine: eventfd/epoll failed: %s", strerror(errno));
		return WEFT_ERR_SYSTEM;
	}
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN;
	ev.data.fd = ctx->wake_fd;
	if (epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, ctx->wake_fd, &ev) < 0)
		goto sys_fail;
	n = wt_chan_fds(ctx->chan, fds, 16);
	for (int i = 0; i < n; i++) {
		ev.events = EPOLLIN;
		ev.data.fd = fds[i];
		if (epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, fds[i], &ev) < 0)
			goto sys_fail;
	}
	if (!ctx->cfg.progress_thread)
		return WEFT_OK;
	if (pthread_create(&ctx->thread, NULL, progress_main, ctx) != 0) {
		ctx_err(err, errlen, "progress engine: cannot start its thread");
		return WEFT_ERR_SYSTEM;
	}
	ctx->thread_started = 1;
	return WEFT_OK;
sys_fail:
	ctx_err(err, errlen, "progress engine: epoll_ctl failed: %s", strerror(errno));
	return WEFT_ERR_SYSTEM;
}

static void ctx_free(wt_api_ctx_t *ctx)
{
	if (ctx->thread_started) {
		atomic_store(&ctx->stop, 1);
		kick_epoll(ctx);
		unpark(ctx);
		pthread_join(ctx->thread, NULL);
	}
	if (ctx->chan != NULL)
		wt_chan_destroy(ctx->chan);
	for (int i = 0; i < ctx->nlinks; i++) {
		for (int d = ctx->stack_depth[i] - 1; d >= 0; d--)
			wt_link_ops(ctx->link_stack[i][d])->close(ctx->link_stack[i][d]);
	}
	wt_api_req_ctx_release(ctx);
	wt_api_slots_release(ctx);
	if (ctx->cache != NULL)
		wt_sched_cache_free(ctx->cache);
	if (ctx->store != NULL)
		wt_boot_store_close(ctx->store);
	if (ctx->server != NULL)
		wt_boot_server_stop(ctx->server);
	if (ctx->wake_fd >= 0)
		close(ctx->wake_fd);
	if (ctx->epfd >= 0)
		close(ctx->epfd);
	free(ctx->peer_link);
	pthread_cond_destroy(&ctx->done_cv);
	pthread_cond_destroy(&ctx->park_cv);
	pthread_mutex_destroy(&ctx->lock);
	pthread_mutex_destroy(&ctx->store_lock);
	free(ctx);
}

/* Links, channel and progress thread for a world that has peers. */
static weft_status_t ctx_connect(wt_api_ctx_t *ctx, const wt_api_boot_t *b, char *err,
				 size_t errlen)
{
	wt_chan_config_t cc;
	weft_status_t st;
	long ncpu;

	memset(&cc, 0, sizeof(cc));
	cc.rank = ctx->rank;
	cc.size = ctx->size;
	cc.eager_limit = ctx->cfg.eager_limit;
	/* Seconds of silence before a peer is declared failed; 0 disables heartbeats. Off by
	 * default without a progress thread: a rank computing between calls sends none. */
	st = wt_util_env_seconds("WEFT_PEER_TIMEOUT", ctx->cfg.progress_thread ? 30 : 0, 0, 1e6,
				 &cc.peer_timeout, err, errlen);
	if (st != WEFT_OK)
		return st;
	st = wt_chan_create(&cc, &ctx->chan);
	if (st != WEFT_OK) {
		ctx_err(err, errlen, "creating the channel failed: %s", weft_strerror(st));
		return st;
	}
	wt_chan_set_peer_fail_cb(ctx->chan, wt_api_on_peer_fail, ctx);
	st = rendezvous_connect(ctx, b, err, errlen);
	if (st == WEFT_OK)
		st = wire_up(ctx, b, err, errlen);
	if (st != WEFT_OK)
		return st;
	wt_api_slots_init(ctx);
	ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	ctx->oversubscribed = ncpu > 0 && ctx->local_size > ncpu;
	/* Every rank of a host sees the same counts, so the choices of a communicator of one
	 * host still agree. */
	if (ctx->oversubscribed && !ctx->cfg.cost_shm_set) {
		ctx->cfg.cost_shm.alpha *= WT_API_OVERSUB_ALPHA;
		ctx->cfg.cost_shm.slot_read = WT_API_OVERSUB_SLOT_READ;
	}
	/* Where ranks share cores a large plain receive reads the sender's buffer itself
	 * instead of waiting for the sender to be scheduled (see channel.c rndv_use_get). With a
	 * core each, streaming serves: a 2-rank broadcast of 16 MiB, whose 1 MiB segments went
	 * by get, took 1.8-3.2 ms against 0.7-1.0 streamed in the full runs of 2026-12-06 23:57
	 * and 23:25 (by get, alltoall of 4 MiB 140-152 us against 211-238 in one alternating
	 * run, but 173-375 against Open MPI's 166-236 in the full run). */
	if (ctx->oversubscribed) {
		wt_chan_set_get_min(ctx->chan, WT_API_OVERSUB_GET_MIN);
		ctx->cfg.cost_shm.xchg_get_min =
		    wt_chan_set_xchg_get_min(ctx->chan, WT_API_OVERSUB_XCHG_GET_MIN);
	} else
		wt_chan_set_far_get_min(ctx->chan, WT_API_FAR_GET_MIN);
	st = start_progress(ctx, err, errlen);
	if (st == WEFT_OK)
		st = init_barrier(ctx, err, errlen);
	return st;
}

weft_status_t wt_api_ctx_create_boot(const wt_api_boot_t *b, wt_api_ctx_t **out, char *err,
				     size_t errlen)
{
	wt_api_ctx_t *ctx = calloc(1, sizeof(*ctx));
	weft_status_t st;

	if (ctx == NULL) {
		ctx_err(err, errlen, "out of memory for the context");
		WT_ERROR("%s on rank %d: %s", b->caller, b->rank, err);
		return WEFT_ERR_NO_MEMORY;
	}
	ctx->wake_fd = -1;
	ctx->epfd = -1;
	pthread_mutex_init(&ctx->lock, NULL);
	pthread_mutex_init(&ctx->store_lock, NULL);
	pthread_cond_init(&ctx->done_cv, NULL);
	pthread_cond_init(&ctx->park_cv, NULL);
	ctx->rank = b->rank;
	ctx->size = b->size;
	ctx->key = b->key;
	ctx->local_rank = b->local_rank >= 0 ? b->local_rank : 0;
	ctx->local_size = b->local_size >= 0 ? b->local_size : 1;
	st = wt_util_crypto_init();
	if (st != WEFT_OK) {
		ctx_err(err, errlen, "libsodium failed to initialise");
		goto fail;
	}
	st = read_config(&ctx->cfg, err, errlen);
	if (st != WEFT_OK)
		goto fail;
	wt_util_log_set_rank(ctx->rank);
	ctx->cache = wt_sched_cache_new(64);
	if (ctx->cache == NULL) {
		st = WEFT_ERR_NO_MEMORY;
		ctx_err(err, errlen, "out of memory for the plan cache");
		goto fail;
	}
	ctx->next_comm_id = 1;
	if (ctx->size > 1) {
		st = ctx_connect(ctx, b, err, errlen);
		if (st != WEFT_OK)
			goto fail;
	}
	*out = ctx;
	return WEFT_OK;
fail:
	WT_ERROR("%s on rank %d: %s", b->caller, ctx->rank, err);
	ctx_free(ctx);
	return st;
}

weft_status_t wt_api_ctx_create(wt_api_ctx_t **out, char *err, size_t errlen)
{
	wt_api_boot_t b;
	weft_status_t st;

	st = wt_api_boot_from_env(&b, err, errlen);
	if (st != WEFT_OK) {
		WT_ERROR("weft_init: %s", err);
		return st;
	}
	return wt_api_ctx_create_boot(&b, out, err, errlen);
}

/* The last communicator is going: a rank whose calls are done may still owe a peer data
 * that sits in its link (an eager send completes once the link took it), and closing a
 * socket with unread input resets it. So every rank waits here until all have arrived,
 * and rank 0, whose store the others read, until all have left. Best effort: a failure
 * is logged and the links close anyway. */
static weft_status_t fini_wait(wt_api_ctx_t *ctx, char *buf, size_t cap)
{
	size_t len = 0;

	if (ctx->thread_started || ctx->chan == NULL)
		return wt_boot_store_get(ctx->store, "fini/done", buf, cap, &len,
					 ctx->cfg.connect_timeout);
	/* No progress thread: keep the links answering while we wait, or a peer whose last
	 * frame's acknowledgement was lost retransmits to nobody and never gets here. */
	uint64_t deadline = wt_util_deadline_in(ctx->cfg.connect_timeout);

	for (;;) {
		pthread_mutex_lock(&ctx->lock);
		wt_api_progress_locked(ctx);
		pthread_mutex_unlock(&ctx->lock);
		weft_status_t st =
		    wt_boot_store_get(ctx->store, "fini/done", buf, cap, &len, 0.005);

		if (st != WEFT_ERR_TIMEOUT || wt_util_deadline_passed(deadline))
			return st;
	}
}

static void fini_barrier(wt_api_ctx_t *ctx)
{
	uint64_t deadline;
	int64_t n = 0;
	char buf[8];
	weft_status_t st;

	st = wt_boot_store_add(ctx->store, "fini/arrived", 1, &n);
	if (st == WEFT_OK && n == ctx->size)
		st = wt_boot_store_set(ctx->store, "fini/done", "1", 1);
	if (st == WEFT_OK)
		st = fini_wait(ctx, buf, sizeof(buf));
	if (st == WEFT_OK)
		st = wt_boot_store_add(ctx->store, "fini/left", 1, &n);
	deadline = wt_util_deadline_in(5);
	while (st == WEFT_OK && ctx->rank == 0 && n < ctx->size &&
	       !wt_util_deadline_passed(deadline)) {
		wt_util_sleep_ns(1000000);
		st = wt_boot_store_add(ctx->store, "fini/left", 0, &n);
	}
	if (st != WEFT_OK)
		WT_WARN(
		    "weft_comm_destroy on rank %d: waiting for the other ranks failed: %s (%s); "
		    "closing the links anyway",
		    ctx->rank, weft_strerror(st), wt_boot_store_error(ctx->store));
}

void wt_api_ctx_release(wt_api_ctx_t *ctx)
{
	int last;

	pthread_mutex_lock(&ctx->lock);
	last = --ctx->ncomms == 0;
	pthread_mutex_unlock(&ctx->lock);
	if (!last)
		return;
	if (ctx->store != NULL && ctx->size > 1 && wt_api_ctx_broken(ctx))
		wt_api_fini_broken(ctx);
	else if (ctx->store != NULL && ctx->size > 1)
		fini_barrier(ctx);
	ctx_free(ctx);
}
