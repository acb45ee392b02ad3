/* Registry of the link drivers built into this library (drivers/). */
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include "drivers/link.h"
#include "lib/util/log.h"

static int job_id_ok(const char *s, size_t max, const char *forbid)
{
	size_t n;

	if (s == NULL)
		return 0;
	n = strnlen(s, max + 1);
	if (n == 0 || n > max)
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] <= ' ' || s[i] > '~' || s[i] == '|' || strchr(forbid, s[i]) != NULL)
			return 0;
	}
	return 1;
}

weft_status_t wt_link_config_check(const char *driver, const wt_link_config_t *cfg, int max_ranks,
				   size_t max_job, const char *forbid)
{
	if (cfg->size < 1 || cfg->size > max_ranks || cfg->rank < 0 || cfg->rank >= cfg->size) {
		WT_ERROR("%s: bad rank %d / size %d (size at most %d)", driver, cfg->rank,
			 cfg->size, max_ranks);
		return WEFT_ERR_INVALID_ARG;
	}
	if (!job_id_ok(cfg->job_id, max_job, forbid)) {
		WT_ERROR("%s: job id must be 1..%zu printable characters", driver, max_job);
		return WEFT_ERR_INVALID_ARG;
	}
	return WEFT_OK;
}

extern const wt_link_ops_t *const wt_link_builtin[];

const wt_link_ops_t *const *wt_link_all(void)
{
	return wt_link_builtin;
}

const wt_link_ops_t *wt_link_find(const char *name)
{
	for (const wt_link_ops_t *const *p = wt_link_builtin; *p != NULL; p++) {
		if (strcmp((*p)->name, name) == 0)
			return *p;
	}
	return NULL;
}

weft_status_t wt_link_bind_addr(const char *driver, const char *bind_addr,
				struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (bind_addr == NULL || inet_pton(AF_INET, bind_addr, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		if (bind_addr == NULL)
			s4->sin_addr.s_addr = htonl(INADDR_ANY);
		*len = sizeof(*s4);
		return WEFT_OK;
	}
	if (inet_pton(AF_INET6, bind_addr, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		*len = sizeof(*s6);
		return WEFT_OK;
	}
	WT_ERROR("%s: bind address '%.64s' is not an IPv4 or IPv6 address", driver, bind_addr);
	return WEFT_ERR_INVALID_ARG;
}

void wt_link_any_to_loopback(struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

		if (s4->sin_addr.s_addr == htonl(INADDR_ANY))
			s4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	} else if (ss->ss_family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		if (IN6_IS_ADDR_UNSPECIFIED(&s6->sin6_addr))
			s6->sin6_addr = in6addr_loopback;
	}
}

weft_status_t wt_link_errq_init(wt_link_errq_t *q, int size)
{
	q->q = calloc((size_t)(size > 0 ? size : 1), sizeof(*q->q));
	q->head = q->len = 0;
	q->cap = size;
	return q->q != NULL ? WEFT_OK : WEFT_ERR_NO_MEMORY;
}

void wt_link_errq_free(wt_link_errq_t *q)
{
	free(q->q);
	q->q = NULL;
	q->len = q->cap = 0;
}

void wt_link_errq_push(wt_link_errq_t *q, int peer, weft_status_t status)
{
	if (q->len >= q->cap)
		return; /* cannot happen: each peer is pushed once */
	q->q[(q->head + q->len) % q->cap] = (struct wt_link_err){peer, status};
	q->len++;
}

int wt_link_errq_pop(wt_link_errq_t *q, wt_link_event_t *ev, int max)
{
	int n = 0;

	while (n < max && q->len > 0) {
		const struct wt_link_err *e = &q->q[q->head];

		memset(&ev[n], 0, sizeof(ev[n]));
		ev[n].type = WT_LINK_EV_PEER_ERROR;
		ev[n].peer = e->peer;
		ev[n].status = e->status;
		q->head = (q->head + 1) % q->cap;
		q->len--;
		n++;
	}
	return n;
}
