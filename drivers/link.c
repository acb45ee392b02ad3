/* Registry of the link drivers built into this library (drivers/). */
#include <string.h>
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
