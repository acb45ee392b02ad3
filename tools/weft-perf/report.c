/* weft-perf (tools/): the rows as JSON and CSV files with the run's metadata, written by
 * rank 0 at the end of the sweep. */
#include <errno.h>
#include <string.h>

#include "perf.h"

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s != NULL && *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static const char *type_name(const struct perf_row *w)
{
	return w->coll == PERF_BARRIER ? "none" : perf_dtype_name(w->dtype);
}

static int finish(FILE *f, const char *path)
{
	int bad = ferror(f);

	if (fclose(f) != 0 || bad) {
		fprintf(stderr, "weft-perf: writing %s failed: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

static FILE *open_out(const char *path)
{
	FILE *f = fopen(path, "w");

	if (f == NULL)
		fprintf(stderr, "weft-perf: cannot write %s: %s\n", path, strerror(errno));
	return f;
}

static void json_meta(FILE *f, const struct perf_meta *m)
{
	fprintf(f, "{\n\"meta\": {\"tool\": \"weft-perf\", \"weft_version\": ");
	json_str(f, m->version);
	fprintf(f, ", \"ranks\": %d, \"date\": ", m->ranks);
	json_str(f, m->date);
	fprintf(f, ", \"hostname\": ");
	json_str(f, m->host);
	fprintf(f, ", \"kernel\": ");
	json_str(f, m->kernel);
	fprintf(f,
		", \"cpus\": %ld, \"iters\": %d, \"warmup_iters\": %d, \"async\": %d, "
		"\"check\": %s, \"command\": ",
		m->cpus, m->iters, m->warmup, m->async, m->check ? "true" : "false");
	json_str(f, m->cmdline);
	/* With --iters-by-size, iters and warmup_iters above ran no size: the bands did, and
	 * each row says which it got. max_bytes null: every size the bands before left. */
	fprintf(f, ", \"iters_by_size\": ");
	if (m->nbands == 0)
		fprintf(f, "null");
	for (int i = 0; i < m->nbands; i++) {
		bool last = perf_band_last(m->band_limit, m->nbands, i);

		fprintf(f, "%s{\"max_bytes\": ", i ? ", " : "[");
		if (last)
			fprintf(f, "null");
		else
			fprintf(f, "%zu", m->band_limit[i]);
		fprintf(f, ", \"iters\": %d, \"warmup_iters\": %d}%s", m->band_iters[i],
			m->band_warmup[i], last ? "]" : "");
		if (last)
			break;
	}
	/* -T: each row's iters and warmup_iters are what the budget left of its band */
	if (m->time_budget > 0)
		fprintf(f, ", \"time_budget_s\": %.15g", m->time_budget);
	else
		fprintf(f, ", \"time_budget_s\": null");
	/* -S: a row's time is the span from the first rank's start to the last rank's end */
	fprintf(f, ", \"timing\": \"%s\"", m->span ? "span" : "slowest_rank");
	fprintf(f, "},\n");
}

/* One row object per line, so `grep` and line-oriented tools work on the file too. */
int perf_write_json(const char *path, const struct perf_meta *m, const struct perf_row *rows,
		    size_t n)
{
	FILE *f = open_out(path);

	if (f == NULL)
		return -1;
	json_meta(f, m);
	fprintf(f, "\"rows\": [\n");
	for (size_t i = 0; i < n; i++) {
		const struct perf_row *w = &rows[i];

		fprintf(f,
			"{\"collective\": \"%s\", \"size_bytes\": %zu, \"count\": %zu, "
			"\"type\": \"%s\", \"op\": \"%s\", \"root\": %d, \"time_us\": %.3f, "
			"\"algbw_gbps\": %.6f, \"busbw_gbps\": %.6f, \"iters\": %d, "
			"\"warmup_iters\": %d, \"wrong\": ",
			perf_coll_name(w->coll), w->bytes, w->count, type_name(w),
			perf_op_name(w->op), w->root, w->time_us, w->algbw, w->busbw, w->iters,
			w->warmup);
		if (w->wrong >= 0)
			fprintf(f, "%lld}", w->wrong);
		else
			fprintf(f, "null}");
		fprintf(f, "%s\n", i + 1 < n ? "," : "");
	}
	fprintf(f, "]\n}\n");
	return finish(f, path);
}

/* CSV has no place for a header block, so the run metadata is repeated as columns. */
static void csv_field(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s != '\0'; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

int perf_write_csv(const char *path, const struct perf_meta *m, const struct perf_row *rows,
		   size_t n)
{
	FILE *f = open_out(path);

	if (f == NULL)
		return -1;
	fprintf(f, "collective,size_bytes,count,type,op,root,time_us,algbw_gbps,busbw_gbps,wrong,"
		   "ranks,iters,warmup_iters,async,weft_version,hostname,date\n");
	for (size_t i = 0; i < n; i++) {
		const struct perf_row *w = &rows[i];

		fprintf(f, "%s,%zu,%zu,%s,%s,%d,%.3f,%.6f,%.6f,", perf_coll_name(w->coll), w->bytes,
			w->count, type_name(w), perf_op_name(w->op), w->root, w->time_us, w->algbw,
			w->busbw);
		if (w->wrong >= 0)
			fprintf(f, "%lld", w->wrong);
		/* the row's own iterations (--iters-by-size may vary them by size) */
		fprintf(f, ",%d,%d,%d,%d,", m->ranks, w->iters, w->warmup, m->async);
		csv_field(f, m->version);
		fputc(',', f);
		csv_field(f, m->host);
		fputc(',', f);
		csv_field(f, m->date);
		fputc('\n', f);
	}
	return finish(f, path);
}
