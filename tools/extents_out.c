/* pnfs-extents' reports: the text table people read and the JSON scripts read, both from one resolved
 * map. Rows are pieces (an extent split where the volume moves to another LUN) unless the caller asks
 * for whole extents; LBAs are in each LUN's logical block size, last LBA inclusive. */
#include "tools/extents.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t lba_first(const struct tool_map *m, const struct tool_piece *p)
{
	return p->lun_off / m->luns[p->lun].block_bytes;
}

static uint64_t lba_last(const struct tool_map *m, const struct tool_piece *p)
{
	return (p->lun_off + p->len - 1) / m->luns[p->lun].block_bytes;
}

/* "0,1,2,3" for the LUNs an extent touches, in first-touch order. */
static void lun_list(const struct tool_map *m, const struct tool_extent *e, char *out, size_t len)
{
	size_t used = 0;
	char *seen = calloc(m->nluns ? m->nluns : 1, 1);

	out[0] = '\0';
	for (size_t k = 0; k < e->npieces && used + 12 < len; k++) {
		uint32_t l = m->pieces[e->piece0 + k].lun;
		if (seen && seen[l])
			continue;
		if (seen)
			seen[l] = 1;
		used += (size_t)snprintf(out + used, len - used, "%s%u", used ? "," : "", l);
	}
	free(seen);
}

static void print_header(FILE *o, const struct tool_map *m)
{
	char h[32];

	proto_fmt_bytes(m->size, PROTO_FMT_TENTHS, h, sizeof(h));
	if (m->path[0])
		fprintf(o, "file      %s (fileid %" PRIu64 "), %" PRIu64 " bytes (%s)\n", m->path, m->fileid,
			m->size, h);
	else
		fprintf(o, "file      fileid %" PRIu64 ", %" PRIu64 " bytes (%s)\n", m->fileid, m->size, h);
	if (!strcmp(m->source, "pool"))
		fprintf(o, "source    the MDS's store in %s (read-only)\n", m->where);
	else
		fprintf(o, "source    the layout from %s\n", m->where);
	fprintf(o, "volume    %s; layout block %u B\n", m->vol_desc[0] ? m->vol_desc : "-", m->block_bytes);
	fprintf(o, "range     %" PRIu64 "+%" PRIu64 "\n", m->range_off, m->range_len);
	if (m->note[0])
		fprintf(o, "note      %s\n", m->note);
	fputc('\n', o);
}

static void print_rows(FILE *o, const struct tool_map *m, unsigned flags)
{
	fprintf(o, "%4s %14s %12s %-10s %14s %4s %12s %12s  %s\n", "EXT", "FILE_OFFSET", "LENGTH", "STATE",
		"VOLUME_OFFSET", "LUN", "LBA_FIRST", "LBA_LAST", "DEVICE");
	for (size_t i = 0; i < m->n; i++) {
		const struct tool_extent *e = &m->ext[i];
		const char *st = tool_ext_state_name(e->state);

		if (e->state == TOOL_EXT_NONE || e->npieces == 0) {
			fprintf(o, "%4zu %14" PRIu64 " %12" PRIu64 " %-10s %14s %4s %12s %12s  %s\n", i,
				e->file_off, e->len, st, "-", "-", "-", "-", "-");
			continue;
		}
		if ((flags & TOOL_OUT_NO_SPLIT) && e->npieces > 1) {
			char luns[256];
			lun_list(m, e, luns, sizeof(luns));
			fprintf(o, "%4zu %14" PRIu64 " %12" PRIu64 " %-10s %14" PRIu64 " %4s %12s %12s  %zu pieces on LUNs %s\n",
				i, e->file_off, e->len, st, e->vol_off, "*", "-", "-", e->npieces, luns);
			continue;
		}
		for (size_t k = 0; k < e->npieces; k++) {
			const struct tool_piece *p = &m->pieces[e->piece0 + k];
			fprintf(o, "%4zu %14" PRIu64 " %12" PRIu64 " %-10s %14" PRIu64 " %4u %12" PRIu64 " %12" PRIu64 "  %s\n",
				i, p->file_off, p->len, st, p->vol_off, p->lun, lba_first(m, p), lba_last(m, p),
				m->luns[p->lun].name);
		}
	}
}

static void print_luns(FILE *o, const struct tool_map *m, const struct tool_lun_stats *ls)
{
	fprintf(o, "\n%4s %8s %8s %24s %6s %25s  %s\n", "LUN", "EXTENTS", "PIECES", "BYTES", "BLOCK",
		"LBAS", "DEVICE");
	for (uint32_t i = 0; i < m->nluns; i++) {
		char bytes[64], h[32], lbas[64], blk[16];
		proto_fmt_bytes(ls[i].bytes, PROTO_FMT_TENTHS, h, sizeof(h));
		snprintf(bytes, sizeof(bytes), "%" PRIu64 " (%s)", ls[i].bytes, h);
		if (ls[i].pieces)
			snprintf(lbas, sizeof(lbas), "%" PRIu64 "-%" PRIu64, ls[i].lba_min, ls[i].lba_max);
		else
			snprintf(lbas, sizeof(lbas), "-");
		snprintf(blk, sizeof(blk), "%u%s", m->luns[i].block_bytes, m->luns[i].block_known ? "" : "?");
		fprintf(o, "%4u %8" PRIu64 " %8" PRIu64 " %24s %6s %25s  %s\n", i, ls[i].extents, ls[i].pieces,
			bytes, blk, lbas, m->luns[i].name);
		if (m->luns[i].why[0])
			fprintf(o, "     %s\n", m->luns[i].why);
	}
}

static void print_frag(FILE *o, const struct tool_stats *s)
{
	char a[32], b[32], c[32], d[32];

	proto_fmt_bytes(s->data_bytes, PROTO_FMT_TENTHS, a, sizeof(a));
	proto_fmt_bytes(s->hole_bytes, PROTO_FMT_TENTHS, b, sizeof(b));
	fprintf(o, "\nfragmentation  %" PRIu64 " extent%s: %" PRIu64 " with blocks (%s), %" PRIu64 " hole%s (%s); "
		   "%.3f extents/MiB\n",
		s->extents, s->extents == 1 ? "" : "s", s->data_extents, a, s->holes, s->holes == 1 ? "" : "s",
		b, s->extents_per_mib);
	proto_fmt_bytes(s->largest, PROTO_FMT_TENTHS, a, sizeof(a));
	proto_fmt_bytes(s->smallest, PROTO_FMT_TENTHS, b, sizeof(b));
	proto_fmt_bytes((uint64_t)(s->mean + 0.5), PROTO_FMT_TENTHS, c, sizeof(c));
	fprintf(o, "               largest %s, smallest %s, mean %s\n", a, b, c);
	proto_fmt_bytes(s->vol_span, PROTO_FMT_TENTHS, d, sizeof(d));
	fprintf(o, "               contiguity %.0f%% (%" PRIu64 " of %" PRIu64 " joins continue in the volume); "
		   "volume span %s\n",
		100.0 * s->contiguity, s->contiguous_joins, s->joins, d);
	proto_fmt_bytes(s->by_state[TOOL_EXT_READ_WRITE], PROTO_FMT_TENTHS, a, sizeof(a));
	proto_fmt_bytes(s->by_state[TOOL_EXT_READ], PROTO_FMT_TENTHS, b, sizeof(b));
	proto_fmt_bytes(s->by_state[TOOL_EXT_INVALID], PROTO_FMT_TENTHS, c, sizeof(c));
	proto_fmt_bytes(s->by_state[TOOL_EXT_NONE], PROTO_FMT_TENTHS, d, sizeof(d));
	fprintf(o, "               by state: READ_WRITE %s, READ %s, INVALID %s, NONE %s\n", a, b, c, d);
}

static void verify_counts(const struct tool_map *m, size_t *ok, size_t *zeros, size_t *bad)
{
	*ok = *zeros = *bad = 0;
	for (size_t i = 0; i < m->n; i++) {
		switch (m->ext[i].verdict) {
		case TOOL_VERIFY_OK:
			(*ok)++;
			break;
		case TOOL_VERIFY_ZEROS:
			(*zeros)++;
			break;
		case TOOL_VERIFY_MISMATCH:
		case TOOL_VERIFY_ERROR:
			(*bad)++;
			break;
		default:
			break;
		}
	}
}

static void print_verify(FILE *o, const struct tool_map *m)
{
	size_t ok, zeros, bad;

	verify_counts(m, &ok, &zeros, &bad);
	fprintf(o, "\nverify    LUN bytes against %s: %zu extent%s, %zu ok, %zu reading as zeros, %zu bad\n",
		m->verified_against, m->n, m->n == 1 ? "" : "s", ok, zeros, bad);
	for (size_t i = 0; i < m->n; i++) {
		const struct tool_extent *e = &m->ext[i];
		if (e->verdict != TOOL_VERIFY_MISMATCH && e->verdict != TOOL_VERIFY_ERROR)
			continue;
		fprintf(o, "extent %zu (file %" PRIu64 "+%" PRIu64 ", %s): %s: %s\n", i, e->file_off, e->len,
			tool_ext_state_name(e->state), tool_verdict_name(e->verdict), e->why);
	}
}

void tool_map_print_text(FILE *o, const struct tool_map *m, unsigned flags)
{
	struct tool_stats s;
	struct tool_lun_stats *ls = calloc(m->nluns ? m->nluns : 1, sizeof(*ls));

	tool_map_stats(m, &s, ls);
	print_header(o, m);
	print_rows(o, m, flags);
	if (ls)
		print_luns(o, m, ls);
	print_frag(o, &s);
	if (m->verified)
		print_verify(o, m);
	free(ls);
}

/* ---- JSON ------------------------------------------------------------------------------------ */

static void json_piece(FILE *o, const struct tool_map *m, const struct tool_piece *p)
{
	fprintf(o, "{\"lun\":%u,\"device\":", p->lun);
	proto_json_str(o, m->luns[p->lun].name);
	fprintf(o, ",\"file_offset\":%" PRIu64 ",\"length\":%" PRIu64 ",\"volume_offset\":%" PRIu64
		   ",\"lun_offset\":%" PRIu64 ",\"lba_first\":%" PRIu64 ",\"lba_last\":%" PRIu64
		   ",\"block_bytes\":%u}",
		p->file_off, p->len, p->vol_off, p->lun_off, lba_first(m, p), lba_last(m, p),
		m->luns[p->lun].block_bytes);
}

static void json_extent(FILE *o, const struct tool_map *m, size_t i, unsigned flags)
{
	const struct tool_extent *e = &m->ext[i];

	fprintf(o, "{\"extent\":%zu,\"file_offset\":%" PRIu64 ",\"length\":%" PRIu64 ",\"state\":\"%s\",",
		i, e->file_off, e->len, tool_ext_state_name(e->state));
	if (e->state == TOOL_EXT_NONE)
		fprintf(o, "\"volume_offset\":null,");
	else
		fprintf(o, "\"volume_offset\":%" PRIu64 ",", e->vol_off);
	if (flags & TOOL_OUT_NO_SPLIT) {
		char *seen = calloc(m->nluns ? m->nluns : 1, 1);
		int first = 1;
		fprintf(o, "\"pieces\":%zu,\"luns\":[", e->npieces);
		for (size_t k = 0; k < e->npieces; k++) {
			uint32_t l = m->pieces[e->piece0 + k].lun;
			if (seen && seen[l])
				continue;
			if (seen)
				seen[l] = 1;
			fprintf(o, "%s%u", first ? "" : ",", l);
			first = 0;
		}
		fprintf(o, "]");
		free(seen);
	} else {
		fprintf(o, "\"pieces\":[");
		for (size_t k = 0; k < e->npieces; k++) {
			fprintf(o, "%s", k ? "," : "");
			json_piece(o, m, &m->pieces[e->piece0 + k]);
		}
		fprintf(o, "]");
	}
	if (m->verified) {
		fprintf(o, ",\"verify\":{\"result\":\"%s\"", tool_verdict_name(e->verdict));
		if (e->verdict == TOOL_VERIFY_MISMATCH)
			fprintf(o, ",\"first_bad_offset\":%" PRIu64 ",\"bad_bytes\":%" PRIu64, e->bad_off,
				e->bad_bytes);
		if (e->why[0]) {
			fprintf(o, ",\"why\":");
			proto_json_str(o, e->why);
		}
		fprintf(o, "}");
	}
	fprintf(o, "}");
}

/* ,"key": and s as a JSON string; an empty s is null when empty_null. */
static void json_field(FILE *o, const char *key, const char *s, int empty_null)
{
	fprintf(o, ",\"%s\":", key);
	if (empty_null && !s[0])
		fprintf(o, "null");
	else
		proto_json_str(o, s);
}

void tool_map_print_json(FILE *o, const struct tool_map *m, unsigned flags)
{
	struct tool_stats s;
	struct tool_lun_stats *ls = calloc(m->nluns ? m->nluns : 1, sizeof(*ls));

	tool_map_stats(m, &s, ls);
	fprintf(o, "{\"source\":");
	proto_json_str(o, m->source);
	json_field(o, "where", m->where, 0);
	json_field(o, "path", m->path, 1);
	fprintf(o, ",\"fileid\":%" PRIu64 ",\"size\":%" PRIu64 ",\"block_bytes\":%u", m->fileid, m->size,
		m->block_bytes);
	fprintf(o, ",\"range\":{\"offset\":%" PRIu64 ",\"length\":%" PRIu64 "}", m->range_off, m->range_len);
	json_field(o, "volume", m->vol_desc, 0);
	json_field(o, "note", m->note, 1);
	fprintf(o, ",\"luns\":[");
	for (uint32_t i = 0; i < m->nluns; i++) {
		fprintf(o, "%s{\"lun\":%u,\"leaf\":%u,\"device\":", i ? "," : "", i, m->luns[i].leaf);
		proto_json_str(o, m->luns[i].name);
		fprintf(o, ",\"block_bytes\":%u,\"block_bytes_known\":%s", m->luns[i].block_bytes,
			m->luns[i].block_known ? "true" : "false");
		if (ls)
			fprintf(o, ",\"bytes\":%" PRIu64 ",\"extents\":%" PRIu64 ",\"pieces\":%" PRIu64, ls[i].bytes,
				ls[i].extents, ls[i].pieces);
		if (ls && ls[i].pieces)
			fprintf(o, ",\"lba_first\":%" PRIu64 ",\"lba_last\":%" PRIu64, ls[i].lba_min, ls[i].lba_max);
		json_field(o, "problem", m->luns[i].why, 1);
		fprintf(o, "}");
	}
	fprintf(o, "],\"extents\":[");
	for (size_t i = 0; i < m->n; i++) {
		fprintf(o, "%s", i ? "," : "");
		json_extent(o, m, i, flags);
	}
	fprintf(o, "],\"fragmentation\":{\"extents\":%" PRIu64 ",\"data_extents\":%" PRIu64 ",\"holes\":%" PRIu64
		   ",\"data_bytes\":%" PRIu64 ",\"hole_bytes\":%" PRIu64 ",\"pieces\":%" PRIu64
		   ",\"extents_per_mib\":%.6g,\"largest\":%" PRIu64 ",\"smallest\":%" PRIu64 ",\"mean\":%.6g"
		   ",\"joins\":%" PRIu64 ",\"contiguous_joins\":%" PRIu64 ",\"contiguity\":%.6g"
		   ",\"volume_span\":%" PRIu64 ",\"bytes_by_state\":{\"READ_WRITE\":%" PRIu64 ",\"READ\":%" PRIu64
		   ",\"INVALID\":%" PRIu64 ",\"NONE\":%" PRIu64 "}}",
		s.extents, s.data_extents, s.holes, s.data_bytes, s.hole_bytes, s.pieces, s.extents_per_mib,
		s.largest, s.smallest, s.mean, s.joins, s.contiguous_joins, s.contiguity, s.vol_span,
		s.by_state[0], s.by_state[1], s.by_state[2], s.by_state[3]);
	if (m->verified) {
		size_t ok, zeros, bad;
		verify_counts(m, &ok, &zeros, &bad);
		fprintf(o, ",\"verify\":{\"against\":");
		proto_json_str(o, m->verified_against);
		fprintf(o, ",\"ok\":%zu,\"zeros\":%zu,\"bad\":%zu,\"passed\":%s}", ok, zeros, bad,
			bad ? "false" : "true");
	}
	fprintf(o, "}\n");
	free(ls);
}
