/* weft-perf (tools/): draws busbw and latency against message size on log axes as a
 * self-contained SVG (one line per collective/dtype/op series), written without any library. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "perf.h"

#define PW 420.0 /* plot area of one panel */
#define PH 300.0
#define TOP 70.0
#define LEFT 80.0
#define GAP 120.0
#define LEGEND_COLS 3

static const char *const colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
				     "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"};
#define NCOLORS (sizeof(colors) / sizeof(colors[0]))

struct axis {
	double lo, hi; /* log of the ends: log2 for sizes, log10 for values */
	double base;
};

struct panel {
	double x0; /* left edge of the plot area */
	const char *title, *ylabel;
	int which; /* 0 busbw, 1 time */
	struct axis y;
};

static double row_value(const struct perf_row *w, int which)
{
	return which == 0 ? w->busbw : w->time_us;
}

static bool same_series(const struct perf_row *a, const struct perf_row *b)
{
	return a->coll == b->coll && a->dtype == b->dtype && a->op == b->op;
}

/* Series are runs of rows, in sweep order; returns the index of row i's series' first row. */
static size_t series_start(const struct perf_row *rows, size_t i)
{
	while (i > 0 && same_series(&rows[i - 1], &rows[i]))
		i--;
	return i;
}

static void xml_text(FILE *f, const char *s)
{
	for (; *s != '\0'; s++) {
		switch (*s) {
		case '&':
			fputs("&amp;", f);
			break;
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		default:
			fputc(*s, f);
		}
	}
}

static void axis_fit(struct axis *a, double vmin, double vmax, double base)
{
	a->base = base;
	if (!(vmin > 0) || !(vmax > 0)) {
		a->lo = 0;
		a->hi = 1;
		return;
	}
	a->lo = floor(log(vmin) / log(base));
	a->hi = ceil(log(vmax) / log(base));
	if (a->hi <= a->lo)
		a->hi = a->lo + 1;
}

static double axis_pos(const struct axis *a, double v, double len)
{
	return (log(v) / log(a->base) - a->lo) / (a->hi - a->lo) * len;
}

static int tick_step(const struct axis *a, int max_ticks)
{
	static const int steps[] = {1, 2, 3, 4, 5, 10, 20, 50};
	int span = (int)(a->hi - a->lo);

	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
		if (span / steps[i] <= max_ticks)
			return steps[i];
	return 100;
}

static void size_label(char *buf, size_t len, int log2v)
{
	static const char *const units[] = {"", "K", "M", "G", "T", "P", "E"};
	int u = log2v / 10;

	if (log2v < 0 || u > 6) {
		snprintf(buf, len, "2^%d", log2v);
		return;
	}
	snprintf(buf, len, "%llu%s", 1ull << (log2v - 10 * u), units[u]);
}

static void draw_axes(FILE *f, const struct panel *p, const struct axis *x)
{
	double bottom = TOP + PH;
	int xs = tick_step(x, 10), ys = tick_step(&p->y, 8);
	char lab[32];

	fprintf(f,
		"<g class=\"panel\">\n<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
		"font-size=\"15\" font-weight=\"bold\">%s</text>\n",
		p->x0 + PW / 2, TOP - 12, p->title);
	for (int k = (int)x->lo; k <= (int)x->hi; k++) {
		double px = p->x0 + (k - x->lo) / (x->hi - x->lo) * PW;

		if (k % xs != 0)
			continue;
		size_label(lab, sizeof(lab), k);
		fprintf(f,
			"<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n",
			px, TOP, px, bottom);
		fprintf(f,
			"<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"11\">%s"
			"</text>\n",
			px, bottom + 16, lab);
	}
	for (int k = (int)p->y.lo; k <= (int)p->y.hi; k++) {
		double py = bottom - (k - p->y.lo) / (p->y.hi - p->y.lo) * PH;

		if (k % ys != 0)
			continue;
		fprintf(f,
			"<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n",
			p->x0, py, p->x0 + PW, py);
		fprintf(f,
			"<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" font-size=\"11\">%g"
			"</text>\n",
			p->x0 - 6, py + 4, pow(10, k));
	}
	fprintf(f,
		"<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
		"stroke=\"#000\"/>\n",
		p->x0, TOP, PW, PH);
	fprintf(f,
		"<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"13\">message "
		"size (bytes, log scale)</text>\n",
		p->x0 + PW / 2, bottom + 38);
	fprintf(f,
		"<text transform=\"translate(%.1f,%.1f) rotate(-90)\" text-anchor=\"middle\" "
		"font-size=\"13\">%s</text>\n</g>\n",
		p->x0 - 55, TOP + PH / 2, p->ylabel);
}

/* Colours repeat after ten series; the repeats are dashed. A barrier is always dotted. */
static void series_style(FILE *f, size_t idx, bool dotted)
{
	const char *dash = dotted ? "2,4" : idx >= NCOLORS ? "6,3" : NULL;

	fprintf(f, "stroke=\"%s\" stroke-width=\"2\" fill=\"none\"", colors[idx % NCOLORS]);
	if (dash != NULL)
		fprintf(f, " stroke-dasharray=\"%s\"", dash);
}

/* One polyline (with point markers) per series; a barrier has no size, so its latency is a
 * dashed horizontal line across the panel. */
static void draw_series(FILE *f, const struct panel *p, const struct axis *x,
			const struct perf_row *rows, size_t a, size_t b, size_t idx)
{
	double bottom = TOP + PH;

	if (rows[a].coll == PERF_BARRIER) {
		double v = row_value(&rows[a], p->which), py;

		if (!(v > 0) || p->which == 0)
			return;
		py = bottom - axis_pos(&p->y, v, PH);
		fprintf(f, "<polyline points=\"%.1f,%.1f %.1f,%.1f\" ", p->x0, py, p->x0 + PW, py);
		series_style(f, idx, true);
		fprintf(f, "/>\n");
		return;
	}
	fprintf(f, "<polyline points=\"");
	for (size_t i = a; i < b; i++) {
		double v = row_value(&rows[i], p->which);

		if (rows[i].bytes == 0 || !(v > 0))
			continue; /* no place on a log axis */
		fprintf(f, "%.1f,%.1f ", p->x0 + axis_pos(x, (double)rows[i].bytes, PW),
			bottom - axis_pos(&p->y, v, PH));
	}
	fprintf(f, "\" ");
	series_style(f, idx, false);
	fprintf(f, "/>\n");
	for (size_t i = a; i < b; i++) {
		double v = row_value(&rows[i], p->which);

		if (rows[i].bytes == 0 || !(v > 0))
			continue;
		fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"/>\n",
			p->x0 + axis_pos(x, (double)rows[i].bytes, PW),
			bottom - axis_pos(&p->y, v, PH), colors[idx % NCOLORS]);
	}
}

/* The name alone when it is unique in the run, else with its dtype and op. */
static void series_label(char *buf, size_t len, const struct perf_row *rows, size_t n, size_t a)
{
	bool dup = false;

	for (size_t i = 0; i < n && !dup; i++)
		dup = rows[i].coll == rows[a].coll && !same_series(&rows[i], &rows[a]);
	if (!dup)
		snprintf(buf, len, "%s", perf_coll_name(rows[a].coll));
	else
		snprintf(buf, len, "%s %s %s", perf_coll_name(rows[a].coll),
			 perf_dtype_name(rows[a].dtype), perf_op_name(rows[a].op));
}

static void draw_legend(FILE *f, const struct perf_row *rows, size_t n, double y0)
{
	size_t idx = 0;
	char lab[96];

	fprintf(f, "<g class=\"legend\">\n");
	for (size_t a = 0; a < n; idx++) {
		size_t b = a + 1;
		double lx = LEFT + (double)(idx % LEGEND_COLS) * 300;
		double ly = y0 + (double)(idx / LEGEND_COLS) * 20;

		while (b < n && same_series(&rows[a], &rows[b]))
			b++;
		series_label(lab, sizeof(lab), rows, n, a);
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" ", lx, ly - 4,
			lx + 28, ly - 4);
		series_style(f, idx, rows[a].coll == PERF_BARRIER);
		fprintf(f, "/>\n<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\">", lx + 34, ly);
		xml_text(f, lab);
		fprintf(f, "%s</text>\n", rows[a].coll == PERF_BARRIER ? " (latency only)" : "");
		a = b;
	}
	fprintf(f, "</g>\n");
}

static void fit_axes(const struct perf_row *rows, size_t n, struct axis *x, struct panel *p)
{
	double xmin = 0, xmax = 0, ymin[2] = {0, 0}, ymax[2] = {0, 0};

	for (size_t i = 0; i < n; i++) {
		double b = (double)rows[i].bytes;

		if (b > 0) {
			xmin = xmin == 0 || b < xmin ? b : xmin;
			xmax = b > xmax ? b : xmax;
		}
		for (int w = 0; w < 2; w++) {
			double v = row_value(&rows[i], w);

			if (!(v > 0) || (b == 0 && rows[i].coll != PERF_BARRIER))
				continue;
			ymin[w] = ymin[w] == 0 || v < ymin[w] ? v : ymin[w];
			ymax[w] = v > ymax[w] ? v : ymax[w];
		}
	}
	axis_fit(x, xmin, xmax, 2);
	axis_fit(&p[0].y, ymin[0], ymax[0], 10);
	axis_fit(&p[1].y, ymin[1], ymax[1], 10);
}

int perf_write_svg(const char *path, const struct perf_meta *m, const struct perf_row *rows,
		   size_t n)
{
	struct panel p[2] = {
	    {LEFT, "Bus bandwidth", "busbw (GB/s, log scale)", 0, {0, 1, 10}},
	    {LEFT + PW + GAP, "Latency", "time (us, log scale)", 1, {0, 1, 10}},
	};
	struct axis x;
	size_t nseries = 0, idx = 0;
	double width = LEFT + 2 * PW + GAP + 40, legend_y = TOP + PH + 75, height;
	FILE *f = fopen(path, "w");

	if (f == NULL) {
		fprintf(stderr, "weft-perf: cannot write %s: %s\n", path, strerror(errno));
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		nseries += series_start(rows, i) == i;
	height = legend_y + (double)((nseries + LEGEND_COLS - 1) / LEGEND_COLS) * 20 + 20;
	fit_axes(rows, n, &x, p);
	fprintf(f,
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/"
		"2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
		"font-family=\"sans-serif\">\n<rect width=\"100%%\" height=\"100%%\" "
		"fill=\"#fff\"/>\n<text x=\"%.1f\" y=\"26\" text-anchor=\"middle\" "
		"font-size=\"16\">weft-perf: ",
		width, height, width, height, width / 2);
	xml_text(f, m->version);
	fprintf(f, ", %d ranks, ", m->ranks);
	xml_text(f, m->host);
	fprintf(f, ", %s</text>\n", m->date);
	for (int k = 0; k < 2; k++) {
		draw_axes(f, &p[k], &x);
		idx = 0;
		for (size_t a = 0; a < n; idx++) {
			size_t b = a + 1;

			while (b < n && same_series(&rows[a], &rows[b]))
				b++;
			draw_series(f, &p[k], &x, rows, a, b, idx);
			a = b;
		}
	}
	draw_legend(f, rows, n, legend_y);
	fprintf(f, "</svg>\n");
	if (fclose(f) != 0) {
		fprintf(stderr, "weft-perf: writing %s failed: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}
