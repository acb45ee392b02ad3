/* Registry of the link drivers built into this library (drivers/). */
#include <string.h>
#include "drivers/link.h"

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
