/* pnfs-extents --svg: the examined range of a file as one horizontal bar, one segment (an SVG group of
 * class "segment") per extent, its pieces filled with their LUN's colour, a strip under it in the
 * extent's state colour; holes are pale and outlined, INVALID extents hatched, READ ones lighter.
 * Offsets on an axis below, a legend of LUNs and states, a tooltip (<title>) on every segment. */
#include "tools/extents.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SVG_W 1000.0
#define BAR_X 20.0
#define BAR_W 960.0
#define BAR_Y 64.0
#define BAR_H 44.0
#define STRIP_H 10.0
#define LEGEND_Y 168.0
#define LEGEND_ROW 18.0

static const char *state_colour(int state)
{
	static const char *const colours[] = {
		[TOOL_EXT_READ_WRITE] = "#2e7d32", [TOOL_EXT_READ] = "#1565c0", [TOOL_EXT_INVALID] = "#ef6c00",
	};

	return (unsigned)state < sizeof(colours) / sizeof(colours[0]) && colours[state] ? colours[state] : "#bdbdbd";
}

/* Distinct colours: a hand-picked set, then hues spread by the golden angle. */
static void lun_colour(uint32_t i, char out[8])
{
	static const char *const base[] = { "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1",
					    "#76b7b2", "#edc948", "#ff9da7", "#9c755f", "#17becf" };
	double h, s = 0.55, v = 0.75, c, x, r = 0, g = 0, b = 0;

	if (i < sizeof(base) / sizeof(base[0])) {
		memcpy(out, base[i], 8);
		return;
	}
	h = fmod(i * 137.508, 360.0) / 60.0;
	c = v * s;
	x = c * (1 - fabs(fmod(h, 2.0) - 1));
	switch ((int)h) {
	case 0: r = c, g = x; break;
	case 1: r = x, g = c; break;
	case 2: g = c, b = x; break;
	case 3: g = x, b = c; break;
	case 4: r = x, b = c; break;
	default: r = c, b = x; break;
	}
	snprintf(out, 8, "#%02x%02x%02x", (unsigned)((r + v - c) * 255), (unsigned)((g + v - c) * 255),
		 (unsigned)((b + v - c) * 255));
}

static void xml(FILE *o, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&': fputs("&amp;", o); break;
		case '<': fputs("&lt;", o); break;
		case '>': fputs("&gt;", o); break;
		case '"': fputs("&quot;", o); break;
		case '\'': fputs("&apos;", o); break;
		default:
			if ((unsigned char)*s >= 0x20 || *s == '\t')
				fputc(*s, o);
		}
	}
}

struct scale {
	uint64_t off, len;
};

static double xpos(const struct scale *sc, uint64_t off)
{
	if (off <= sc->off || !sc->len)
		return BAR_X;
	if (off - sc->off >= sc->len)
		return BAR_X + BAR_W;
	return BAR_X + BAR_W * ((double)(off - sc->off) / (double)sc->len);
}

static void segment(FILE *o, const struct tool_map *m, const struct scale *sc, size_t i)
{
	const struct tool_extent *e = &m->ext[i];
	double x0 = xpos(sc, e->file_off), x1 = xpos(sc, e->file_off + e->len), w = x1 - x0;
	char colour[8];

	fprintf(o, "<g class=\"segment\" data-extent=\"%zu\" data-state=\"%s\">\n<title>extent %zu: file %" PRIu64
		   "+%" PRIu64 ", %s",
		i, tool_ext_state_name(e->state), i, e->file_off, e->len, tool_ext_state_name(e->state));
	if (e->state != TOOL_EXT_NONE)
		fprintf(o, ", volume %" PRIu64, e->vol_off);
	for (size_t k = 0; k < e->npieces && k < 8; k++) {
		const struct tool_piece *p = &m->pieces[e->piece0 + k];
		fprintf(o, "; LUN %u at byte %" PRIu64 " (+%" PRIu64 ")", p->lun, p->lun_off, p->len);
	}
	if (e->npieces > 8)
		fprintf(o, "; %zu pieces in all", e->npieces);
	if (e->verdict == TOOL_VERIFY_MISMATCH || e->verdict == TOOL_VERIFY_ERROR) {
		fprintf(o, "; %s: ", tool_verdict_name(e->verdict));
		xml(o, e->why);
	}
	fprintf(o, "</title>\n");
	if (w < 0.5)
		w = 0.5;
	if (e->state == TOOL_EXT_NONE || !e->npieces) {
		fprintf(o, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"#f4f4f4\" "
			   "stroke=\"#9e9e9e\" stroke-width=\"0.6\" stroke-dasharray=\"3,2\"/>\n",
			x0, BAR_Y, w, BAR_H);
	} else {
		for (size_t k = 0; k < e->npieces; k++) {
			const struct tool_piece *p = &m->pieces[e->piece0 + k];
			double px0 = xpos(sc, p->file_off), pw = xpos(sc, p->file_off + p->len) - px0;
			if (pw < 0.5)
				pw = 0.5;
			lun_colour(p->lun, colour);
			fprintf(o, "<rect class=\"piece\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" "
				   "fill=\"%s\"%s/>\n",
				px0, BAR_Y, pw, BAR_H, colour,
				e->state == TOOL_EXT_READ ? " fill-opacity=\"0.55\"" : "");
		}
		if (e->state == TOOL_EXT_INVALID)
			fprintf(o, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"url(#invalid)\"/>\n",
				x0, BAR_Y, w, BAR_H);
	}
	/* The boundary, so that neighbouring extents on one LUN stay two segments to the eye. */
	fprintf(o, "<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" stroke=\"#ffffff\" stroke-width=\"1\"/>\n",
		x0, BAR_Y, x0, BAR_Y + BAR_H);
	fprintf(o, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\"/>\n", x0,
		BAR_Y + BAR_H + 2, w, STRIP_H, state_colour(e->state));
	if (w >= 28)
		fprintf(o, "<text class=\"label\" x=\"%.2f\" y=\"%.1f\" text-anchor=\"middle\">%zu</text>\n",
			x0 + w / 2, BAR_Y + BAR_H / 2 + 4, i);
	fprintf(o, "</g>\n");
}

static void axis(FILE *o, const struct scale *sc)
{
	const int ticks = 5;
	double y = BAR_Y + BAR_H + STRIP_H + 6;

	fprintf(o, "<g class=\"axis\">\n<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555\"/>\n",
		BAR_X, y, BAR_X + BAR_W, y);
	for (int t = 0; t <= ticks; t++) {
		uint64_t off = sc->off + (uint64_t)((double)sc->len * t / ticks);
		double x = BAR_X + BAR_W * t / ticks;
		char h[32];
		proto_fmt_bytes(off, PROTO_FMT_TENTHS, h, sizeof(h));
		fprintf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555\"/>\n", x, y, x,
			y + 5);
		fprintf(o, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\">%s</text>\n", x, y + 18,
			t == 0 ? "start" : t == ticks ? "end" : "middle", h);
	}
	fprintf(o, "</g>\n");
}

static void legend(FILE *o, const struct tool_map *m)
{
	static const int states[] = { TOOL_EXT_READ_WRITE, TOOL_EXT_READ, TOOL_EXT_INVALID, TOOL_EXT_NONE };
	double y = LEGEND_Y;
	char colour[8];

	fprintf(o, "<g class=\"legend\">\n<text x=\"%.1f\" y=\"%.1f\" font-weight=\"bold\">states</text>\n",
		BAR_X, y);
	for (int s = 0; s < 4; s++) {
		double x = BAR_X + 60 + s * 140;
		fprintf(o, "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/>", x, y - 10,
			state_colour(states[s]));
		fprintf(o, "<text x=\"%.1f\" y=\"%.1f\">%s%s</text>\n", x + 16, y,
			tool_ext_state_name(states[s]),
			states[s] == TOOL_EXT_INVALID ? " (hatched)" : states[s] == TOOL_EXT_NONE ? " (hole)" : "");
	}
	y += LEGEND_ROW + 4;
	fprintf(o, "<text x=\"%.1f\" y=\"%.1f\" font-weight=\"bold\">LUNs</text>\n", BAR_X, y);
	for (uint32_t i = 0; i < m->nluns; i++) {
		lun_colour(i, colour);
		fprintf(o, "<rect class=\"lun\" x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/>",
			BAR_X + 60, y - 10, colour);
		fprintf(o, "<text x=\"%.1f\" y=\"%.1f\">LUN %u  ", BAR_X + 76, y, i);
		xml(o, m->luns[i].name);
		fprintf(o, "</text>\n");
		y += LEGEND_ROW;
	}
	fprintf(o, "</g>\n");
}

int tool_map_write_svg(FILE *o, const struct tool_map *m)
{
	struct scale sc = { m->range_off, m->range_len };
	double h = LEGEND_Y + LEGEND_ROW * (m->nluns + 2) + 10;
	char hs[32];

	fprintf(o, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		   "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
		   "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"12\">\n",
		SVG_W, h, SVG_W, h);
	fprintf(o, "<title>pnfs-extents: ");
	xml(o, m->path[0] ? m->path : "file");
	fprintf(o, "</title>\n<defs><pattern id=\"invalid\" width=\"8\" height=\"8\" patternUnits=\"userSpaceOnUse\" "
		   "patternTransform=\"rotate(45)\"><rect width=\"3\" height=\"8\" fill=\"#ffffff\" "
		   "fill-opacity=\"0.6\"/></pattern></defs>\n");
	fprintf(o, "<rect width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n");
	proto_fmt_bytes(m->size, PROTO_FMT_TENTHS, hs, sizeof(hs));
	fprintf(o, "<text x=\"%.1f\" y=\"22\" font-size=\"15\" font-weight=\"bold\">", BAR_X);
	if (m->path[0])
		xml(o, m->path);
	else
		fprintf(o, "fileid %" PRIu64, m->fileid);
	fprintf(o, " (fileid %" PRIu64 ", %s)</text>\n", m->fileid, hs);
	fprintf(o, "<text x=\"%.1f\" y=\"42\">range %" PRIu64 "+%" PRIu64 ", %zu extent%s, %zu piece%s; ", BAR_X,
		m->range_off, m->range_len, m->n, m->n == 1 ? "" : "s", m->npieces, m->npieces == 1 ? "" : "s");
	xml(o, m->vol_desc);
	fprintf(o, "</text>\n");
	fprintf(o, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#333\" "
		   "stroke-width=\"0.8\"/>\n",
		BAR_X - 0.5, BAR_Y - 0.5, BAR_W + 1, BAR_H + 1);
	fprintf(o, "<g class=\"bar\">\n");
	for (size_t i = 0; i < m->n; i++)
		segment(o, m, &sc, i);
	fprintf(o, "</g>\n");
	if (!m->n)
		fprintf(o, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">no extents in this range</text>\n",
			BAR_X + BAR_W / 2, BAR_Y + BAR_H / 2 + 4);
	axis(o, &sc);
	legend(o, m);
	fprintf(o, "</svg>\n");
	return ferror(o) ? -EIO : 0;
}
