/* Logging for every layer (lib/util). WEFT_LOG_LEVEL = error|warn|info|debug|trace
 * (or 0..4); default warn. Lines go to stderr, prefixed with "weft[rank]". */
#ifndef WT_UTIL_LOG_H
#define WT_UTIL_LOG_H

enum wt_log_level {
	WT_LOG_ERROR = 0,
	WT_LOG_WARN = 1,
	WT_LOG_INFO = 2,
	WT_LOG_DEBUG = 3,
	WT_LOG_TRACE = 4,
};

/* Current threshold (reads WEFT_LOG_LEVEL once). */
int wt_util_log_level(void);
/* Rank shown in the prefix; -1 until known. */
void wt_util_log_set_rank(int rank);
void wt_util_log(int level, const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#define WT_LOG(lvl, ...)                                                                 \
	do {                                                                             \
		if ((lvl) <= wt_util_log_level())                                        \
			wt_util_log((lvl), __FILE__, __LINE__, __VA_ARGS__);             \
	} while (0)
#define WT_ERROR(...) WT_LOG(WT_LOG_ERROR, __VA_ARGS__)
#define WT_WARN(...) WT_LOG(WT_LOG_WARN, __VA_ARGS__)
#define WT_INFO(...) WT_LOG(WT_LOG_INFO, __VA_ARGS__)
#define WT_DEBUG(...) WT_LOG(WT_LOG_DEBUG, __VA_ARGS__)
#define WT_TRACE(...) WT_LOG(WT_LOG_TRACE, __VA_ARGS__)

#ifdef WT_DEBUG_ASSERTS
#include <assert.h>
#define WT_ASSERT(x) assert(x)
#else
#define WT_ASSERT(x) ((void)0)
#endif

#endif
