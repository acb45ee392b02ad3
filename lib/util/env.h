/* Validated environment parsing (lib/util). Every getter distinguishes "unset" from
 * "set but invalid"; an invalid value is an error with a message, never a silent default. */
#ifndef WT_UTIL_ENV_H
#define WT_UTIL_ENV_H

#include <stddef.h>
#include <stdint.h>
#include "lib/util/status.h"

/* Parse a decimal integer in [min, max]. Unset -> *out = def, WEFT_OK.
 * Invalid -> WEFT_ERR_INVALID_ARG and errbuf says which variable and why. */
weft_status_t wt_util_env_int(const char *name, int64_t def, int64_t min, int64_t max,
			      int64_t *out, char *errbuf, size_t errlen);
/* Parse a non-negative decimal number of seconds (fractions allowed) in [min, max]. */
weft_status_t wt_util_env_seconds(const char *name, double def, double min, double max,
				  double *out, char *errbuf, size_t errlen);
/* Boolean: 1/0, true/false, yes/no, on/off (case-insensitive). */
weft_status_t wt_util_env_bool(const char *name, int def, int *out, char *errbuf,
			       size_t errlen);
/* String; NULL when unset or empty. */
const char *wt_util_env_str(const char *name);

/* Strict string -> integer parse of a whole string; 0 on success. */
int wt_util_parse_int(const char *s, int64_t min, int64_t max, int64_t *out);

#endif
