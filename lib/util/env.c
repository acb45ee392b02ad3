/* Strict, range-checked parsing of environment variables (lib/util). Anything that is
 * set but does not parse cleanly is an error with a message, never a silent default. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "lib/util/env.h"

static void set_err(char *errbuf, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_err(char *errbuf, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!errbuf || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(errbuf, errlen, fmt, ap);
	va_end(ap);
}

const char *wt_util_env_str(const char *name)
{
	const char *s;

	if (!name)
		return NULL;
	s = getenv(name);
	if (!s || !*s)
		return NULL;
	return s;
}

int wt_util_parse_int(const char *s, int64_t min, int64_t max, int64_t *out)
{
	const char *p = s;
	char *end;
	long long v;

	if (!s || !out)
		return -1;
	/* strtoll would accept leading blanks; a strict parse does not. */
	if (*p == '+' || *p == '-')
		p++;
	if (*p < '0' || *p > '9')
		return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno != 0 || *end != '\0')
		return -1;
	if (v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

weft_status_t wt_util_env_int(const char *name, int64_t def, int64_t min, int64_t max, int64_t *out,
			      char *errbuf, size_t errlen)
{
	const char *s = wt_util_env_str(name);
	int64_t v;

	if (!out)
		return WEFT_ERR_INVALID_ARG;
	if (!s) {
		*out = def;
		return WEFT_OK;
	}
	if (wt_util_parse_int(s, INT64_MIN, INT64_MAX, &v) != 0) {
		set_err(errbuf, errlen, "%s='%.64s' is not an integer", name, s);
		return WEFT_ERR_INVALID_ARG;
	}
	if (v < min || v > max) {
		set_err(errbuf, errlen, "%s=%lld is out of range [%lld, %lld]", name, (long long)v,
			(long long)min, (long long)max);
		return WEFT_ERR_INVALID_ARG;
	}
	*out = v;
	return WEFT_OK;
}

/* Plain decimal only: digits with at most one '.', at least one digit. strtod would
 * also take hex, exponents, "inf" and "nan", none of which is a sane timeout. */
static int is_plain_decimal(const char *s)
{
	int digits = 0, dots = 0;

	if (*s == '+')
		s++;
	for (; *s; s++) {
		if (*s >= '0' && *s <= '9')
			digits++;
		else if (*s == '.' && dots == 0)
			dots++;
		else
			return 0;
	}
	return digits > 0;
}

weft_status_t wt_util_env_seconds(const char *name, double def, double min, double max, double *out,
				  char *errbuf, size_t errlen)
{
	const char *s = wt_util_env_str(name);
	char *end;
	double v;

	if (!out)
		return WEFT_ERR_INVALID_ARG;
	if (!s) {
		*out = def;
		return WEFT_OK;
	}
	if (!is_plain_decimal(s)) {
		set_err(errbuf, errlen, "%s='%.64s' is not a number of seconds", name, s);
		return WEFT_ERR_INVALID_ARG;
	}
	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || *end != '\0' || !isfinite(v)) {
		set_err(errbuf, errlen, "%s='%.64s' is not a number of seconds", name, s);
		return WEFT_ERR_INVALID_ARG;
	}
	if (v < min || v > max) {
		set_err(errbuf, errlen, "%s=%s is out of range [%g, %g] seconds", name, s, min,
			max);
		return WEFT_ERR_INVALID_ARG;
	}
	*out = v;
	return WEFT_OK;
}

weft_status_t wt_util_env_bool(const char *name, int def, int *out, char *errbuf, size_t errlen)
{
	static const char *const yes[] = {"1", "true", "yes", "on"};
	static const char *const no[] = {"0", "false", "no", "off"};
	const char *s = wt_util_env_str(name);

	if (!out)
		return WEFT_ERR_INVALID_ARG;
	if (!s) {
		*out = def;
		return WEFT_OK;
	}
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*out = 1;
			return WEFT_OK;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*out = 0;
			return WEFT_OK;
		}
	}
	set_err(errbuf, errlen, "%s='%.64s' is not a boolean (1/0, true/false, yes/no, on/off)",
		name, s);
	return WEFT_ERR_INVALID_ARG;
}
