/* Failure reporting shared by the multi-process checkers (tests/integration): fail()
 * prints "rank R: FAIL: ..." on stderr and counts; the program exits non-zero when
 * g_fail is. Header-only: it defines the program's g_rank and g_fail. */
#ifndef WT_TEST_REPORT_H
#define WT_TEST_REPORT_H

#include <stdarg.h>
#include <stdio.h>

static int g_rank, g_fail;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), unused));

static void fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "rank %d: FAIL: ", g_rank);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	g_fail++;
}

#endif
