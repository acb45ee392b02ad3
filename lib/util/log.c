/* Thread-safe logging to stderr for every layer (lib/util). Each line is emitted by one
 * write() so lines from concurrent threads never interleave. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include "lib/util/log.h"

#define WT_LOG_LINE_MAX 1024
#define WT_LOG_UNSET (-100)

static atomic_int wt_log_threshold = WT_LOG_UNSET;
static atomic_int wt_log_rank = -1;
static pthread_once_t wt_log_once = PTHREAD_ONCE_INIT;

static const char *const wt_log_names[] = {"ERROR", "WARN", "INFO", "DEBUG", "TRACE"};
static const char *const wt_log_env_names[] = {"error", "warn", "info", "debug", "trace"};

static void write_all(const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(STDERR_FILENO, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		buf += n;
		len -= (size_t)n;
	}
}

#define WT_LOG_OFF (-1) /* "off": not even errors (fuzzing, embedders with their own) */

static int parse_level(const char *s)
{
	if (strcasecmp(s, "off") == 0)
		return WT_LOG_OFF;
	for (int i = 0; i <= WT_LOG_TRACE; i++) {
		if (strcasecmp(s, wt_log_env_names[i]) == 0)
			return i;
	}
	if (s[0] >= '0' && s[0] <= '4' && s[1] == '\0')
		return s[0] - '0';
	return -2;
}

static void read_level(void)
{
	const char *s = getenv("WEFT_LOG_LEVEL");
	int lvl = WT_LOG_WARN;

	if (s && *s) {
		lvl = parse_level(s);
		if (lvl < WT_LOG_OFF) {
			char msg[256];
			int n = snprintf(msg, sizeof(msg),
					 "weft: WEFT_LOG_LEVEL='%.64s' is not one of "
					 "off|error|warn|info|debug|trace|0..4; using warn\n",
					 s);

			if (n > 0)
				write_all(msg,
					  (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
			lvl = WT_LOG_WARN;
		}
	}
	atomic_store(&wt_log_threshold, lvl);
}

int wt_util_log_level(void)
{
	int lvl = atomic_load_explicit(&wt_log_threshold, memory_order_relaxed);

	if (lvl != WT_LOG_UNSET)
		return lvl;
	pthread_once(&wt_log_once, read_level);
	return atomic_load(&wt_log_threshold);
}

void wt_util_log_set_rank(int rank)
{
	atomic_store(&wt_log_rank, rank);
}

static const char *base_name(const char *file)
{
	const char *slash;

	if (!file)
		return "?";
	slash = strrchr(file, '/');
	return slash ? slash + 1 : file;
}

void wt_util_log(int level, const char *file, int line, const char *fmt, ...)
{
	char buf[WT_LOG_LINE_MAX];
	size_t cap = sizeof(buf) - 1; /* room kept for the newline */
	int rank = atomic_load(&wt_log_rank);
	size_t len;
	va_list ap;
	int n;

	if (level < WT_LOG_ERROR)
		level = WT_LOG_ERROR;
	if (level > WT_LOG_TRACE)
		level = WT_LOG_TRACE;
	if (rank >= 0)
		n = snprintf(buf, cap, "weft[%d] %s %s:%d: ", rank, wt_log_names[level],
			     base_name(file), line);
	else
		n = snprintf(buf, cap, "weft[?] %s %s:%d: ", wt_log_names[level], base_name(file),
			     line);
	if (n < 0)
		return;
	len = (size_t)n < cap ? (size_t)n : cap - 1;
	va_start(ap, fmt);
	n = vsnprintf(buf + len, cap - len, fmt, ap);
	va_end(ap);
	if (n > 0)
		len += (size_t)n < cap - len ? (size_t)n : cap - len - 1;
	/* Messages that already end in a newline are not doubled. */
	if (len == 0 || buf[len - 1] != '\n')
		buf[len++] = '\n';
	write_all(buf, len);
}
