/* The pure half of the pool: CRC32C, the LUN label (encode, decode, verify, signature), the pool's
 * geometry from LUN sizes, UUIDs. No I/O here, so every rule is unit-testable; pool.c does the I/O. */
#include "mds/pool.h"
#include "proto/util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

/* ---- CRC32C ----------------------------------------------------------------------------------- */

static uint32_t crc_table[256];
static int crc_ready;

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
		crc_table[i] = c;
	}
	crc_ready = 1;
}

uint32_t mds_crc32c(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	if (!crc_ready)
		crc_init();
	crc = ~crc;
	while (len--)
		crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

/* ---- little-endian fields ------------------------------------------------------------------------ */

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)v);
	put32(p + 4, (uint32_t)(v >> 32));
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

/* ---- label ------------------------------------------------------------------------------------ */

#define CRC_OFF (MDS_LABEL_BYTES - 4)

void mds_label_encode(const struct mds_pool_label *l, uint8_t out[MDS_LABEL_BYTES])
{
	memset(out, 0, MDS_LABEL_BYTES);
	memcpy(out, MDS_LABEL_MAGIC, 8);
	put32(out + 8, MDS_LABEL_VERSION);
	put32(out + 12, MDS_LABEL_BYTES);
	memcpy(out + 16, l->pool_uuid, 16);
	put32(out + 32, l->lun_index);
	put32(out + 36, l->lun_count);
	put64(out + 40, l->lun_bytes);
	put64(out + 48, l->data_start_bytes);
	put64(out + 56, l->data_bytes);
	put64(out + 64, l->stripe_unit_bytes);
	put32(out + 72, (uint32_t)l->volume_type);
	put32(out + 76, l->block_bytes);
	put64(out + 80, l->volume_bytes);
	put64(out + 88, l->format_time);
	put32(out + CRC_OFF, mds_crc32c(0, out, CRC_OFF));
}

int mds_label_present(const uint8_t *buf, size_t len)
{
	return len >= 8 && memcmp(buf, MDS_LABEL_MAGIC, 8) == 0;
}

static int pow2(uint64_t x)
{
	return x && !(x & (x - 1));
}

int mds_label_decode(const uint8_t *buf, size_t len, struct mds_pool_label *out, char *why,
		     size_t whylen)
{
	struct mds_pool_label l;
	uint32_t version, size, crc, want;

	if (len < MDS_LABEL_BYTES) {
		proto_errf(why, whylen, 0, "only %zu bytes, a label has %u", len, MDS_LABEL_BYTES);
		return -EBADMSG;
	}
	if (!mds_label_present(buf, len)) {
		proto_errf(why, whylen, 0, "no pool label (magic absent)");
		return -ENOENT;
	}
	version = get32(buf + 8);
	if (version != MDS_LABEL_VERSION) {
		proto_errf(why, whylen, 0, "label version %u, this program knows %u", version,
			MDS_LABEL_VERSION);
		return -EPROTONOSUPPORT;
	}
	size = get32(buf + 12);
	if (size != MDS_LABEL_BYTES) {
		proto_errf(why, whylen, 0, "label size %u, expected %u", size, MDS_LABEL_BYTES);
		return -EBADMSG;
	}
	crc = get32(buf + CRC_OFF);
	want = mds_crc32c(0, buf, CRC_OFF);
	if (crc != want) {
		proto_errf(why, whylen, 0, "label checksum 0x%08x, contents give 0x%08x (damaged)", crc, want);
		return -EBADMSG;
	}
	for (unsigned i = 96; i < CRC_OFF; i++) {
		if (buf[i]) {
			proto_errf(why, whylen, 0, "label byte %u is reserved but not zero", i);
			return -EBADMSG;
		}
	}
	memset(&l, 0, sizeof(l));
	memcpy(l.pool_uuid, buf + 16, 16);
	l.lun_index = get32(buf + 32);
	l.lun_count = get32(buf + 36);
	l.lun_bytes = get64(buf + 40);
	l.data_start_bytes = get64(buf + 48);
	l.data_bytes = get64(buf + 56);
	l.stripe_unit_bytes = get64(buf + 64);
	l.volume_type = (enum mds_volume_type)get32(buf + 72);
	l.block_bytes = get32(buf + 76);
	l.volume_bytes = get64(buf + 80);
	l.format_time = get64(buf + 88);
	if (!l.lun_count || l.lun_count > MDS_MAX_LUNS || l.lun_index >= l.lun_count) {
		proto_errf(why, whylen, 0, "LUN index %u of %u is impossible", l.lun_index, l.lun_count);
		return -EBADMSG;
	}
	if (l.volume_type != MDS_VOL_STRIPE && l.volume_type != MDS_VOL_CONCAT) {
		proto_errf(why, whylen, 0, "unknown volume type %u", (unsigned)l.volume_type);
		return -EBADMSG;
	}
	if (l.block_bytes < 512 || !pow2(l.block_bytes)) {
		proto_errf(why, whylen, 0, "block size %u is not a power of two >= 512", l.block_bytes);
		return -EBADMSG;
	}
	if (l.volume_type == MDS_VOL_STRIPE &&
	    (l.stripe_unit_bytes < MDS_POOL_MIN_STRIPE_UNIT || !pow2(l.stripe_unit_bytes) ||
	     l.stripe_unit_bytes % l.block_bytes || l.data_bytes % l.stripe_unit_bytes)) {
		proto_errf(why, whylen, 0, "stripe unit %llu invalid for block size %u and data length %llu",
			(unsigned long long)l.stripe_unit_bytes, l.block_bytes,
			(unsigned long long)l.data_bytes);
		return -EBADMSG;
	}
	if (l.data_start_bytes < MDS_LABEL_BYTES || !l.data_bytes || l.data_start_bytes % l.block_bytes ||
	    l.data_bytes % l.block_bytes || l.data_start_bytes > l.lun_bytes ||
	    l.data_bytes > l.lun_bytes - l.data_start_bytes) {
		proto_errf(why, whylen, 0, "data area %llu+%llu does not fit the LUN's %llu bytes",
			(unsigned long long)l.data_start_bytes, (unsigned long long)l.data_bytes,
			(unsigned long long)l.lun_bytes);
		return -EBADMSG;
	}
	if (l.volume_bytes < l.data_bytes ||
	    (l.volume_type == MDS_VOL_STRIPE && l.volume_bytes != l.data_bytes * l.lun_count)) {
		proto_errf(why, whylen, 0, "volume size %llu inconsistent with data length %llu x %u LUNs",
			(unsigned long long)l.volume_bytes, (unsigned long long)l.data_bytes,
			l.lun_count);
		return -EBADMSG;
	}
	*out = l;
	return 0;
}

void mds_label_signature(const struct mds_pool_label *l, int64_t *offset, uint8_t *bytes, size_t *len)
{
	uint8_t buf[MDS_LABEL_BYTES];

	mds_label_encode(l, buf);
	memcpy(bytes, buf + MDS_LABEL_SIG_OFFSET, MDS_LABEL_SIG_BYTES);
	*offset = MDS_LABEL_SIG_OFFSET;
	*len = MDS_LABEL_SIG_BYTES;
}

void mds_label_from_format(const struct mds_store_format *f, uint32_t i, uint64_t format_time,
			   struct mds_pool_label *out)
{
	memset(out, 0, sizeof(*out));
	memcpy(out->pool_uuid, f->pool_uuid, 16);
	out->lun_index = i;
	out->lun_count = f->nluns;
	out->lun_bytes = f->luns[i].size_bytes;
	out->data_start_bytes = f->luns[i].data_start_bytes;
	out->data_bytes = f->luns[i].data_bytes;
	out->stripe_unit_bytes = f->stripe_unit_bytes;
	out->volume_type = f->volume_type;
	out->block_bytes = f->block_bytes;
	out->volume_bytes = f->volume_bytes;
	out->format_time = format_time;
}

int mds_label_check(const struct mds_pool_label *l, const struct mds_store_format *f, uint32_t i,
		    char *why, size_t whylen)
{
	char a[37], b[37];

	if (memcmp(l->pool_uuid, f->pool_uuid, 16)) {
		mds_uuid_format(l->pool_uuid, a);
		mds_uuid_format(f->pool_uuid, b);
		proto_errf(why, whylen, 0, "labelled for pool %s, this pool is %s", a, b);
		return -EINVAL;
	}
	if (l->lun_index != i || l->lun_count != f->nluns) {
		proto_errf(why, whylen, 0, "labelled as LUN %u of %u, expected LUN %u of %u", l->lun_index,
			l->lun_count, i, f->nluns);
		return -EINVAL;
	}
	if (l->data_start_bytes != f->luns[i].data_start_bytes || l->data_bytes != f->luns[i].data_bytes ||
	    l->stripe_unit_bytes != f->stripe_unit_bytes || l->volume_type != f->volume_type ||
	    l->volume_bytes != f->volume_bytes || l->block_bytes != f->block_bytes) {
		proto_errf(why, whylen, 0, "label geometry (data %llu+%llu, unit %llu) differs from the store's "
			"(data %llu+%llu, unit %llu)",
			(unsigned long long)l->data_start_bytes, (unsigned long long)l->data_bytes,
			(unsigned long long)l->stripe_unit_bytes,
			(unsigned long long)f->luns[i].data_start_bytes,
			(unsigned long long)f->luns[i].data_bytes,
			(unsigned long long)f->stripe_unit_bytes);
		return -EINVAL;
	}
	return 0;
}

void mds_label_explain(const uint8_t *now, size_t len, const struct mds_pool_label *expected, char *why,
		       size_t whylen)
{
	struct mds_pool_label l;
	char a[37], b[37], d[320];
	int zeros = 1, rc;

	for (size_t k = 0; k < len && zeros; k++)
		zeros = now[k] == 0;
	rc = mds_label_decode(now, len, &l, d, sizeof(d));
	if (rc == -ENOENT) {
		proto_errf(why, whylen, 0, "no pool label (%s)", zeros ? "the bytes are all zero: a blank LUN" : "other data");
		return;
	}
	if (rc) {
		proto_errf(why, whylen, 0, "a damaged pool label (%s)", d);
		return;
	}
	mds_uuid_format(l.pool_uuid, a);
	mds_uuid_format(expected->pool_uuid, b);
	if (memcmp(l.pool_uuid, expected->pool_uuid, 16))
		proto_errf(why, whylen, 0, "the label of another pool (%s, LUN %u of %u), not of pool %s", a, l.lun_index,
			l.lun_count, b);
	else if (l.lun_index != expected->lun_index || l.lun_count != expected->lun_count)
		proto_errf(why, whylen, 0, "the label of this pool's LUN %u of %u, not of LUN %u (LUNs swapped?)", l.lun_index,
			l.lun_count, expected->lun_index);
	else if (l.format_time != expected->format_time)
		proto_errf(why, whylen, 0, "this LUN's label written at another format (time %llu, expected %llu)",
			(unsigned long long)l.format_time, (unsigned long long)expected->format_time);
	else
		proto_errf(why, whylen, 0, "a label of this LUN that differs from the one read at start");
}

/* ---- geometry ---------------------------------------------------------------------------------- */

int mds_pool_plan(const uint64_t *lun_bytes, const uint32_t *lun_block_bytes, uint32_t nluns,
		  enum mds_volume_type type, uint64_t su, uint32_t bs, const uint8_t *pool_uuid,
		  struct mds_store_format *out, char *why, size_t whylen)
{
	uint64_t unit, common = UINT64_MAX, total = 0;

	memset(out, 0, sizeof(*out));
	if (nluns == 0 || nluns > MDS_MAX_LUNS) {
		proto_errf(why, whylen, 0, "%u LUNs: a pool has 1 to %u", nluns, MDS_MAX_LUNS);
		return -EINVAL;
	}
	if (bs < 512 || !pow2(bs) || bs > MDS_LABEL_AREA_BYTES) {
		proto_errf(why, whylen, 0, "block size %u is not a power of two from 512 to 1 MiB", bs);
		return -EINVAL;
	}
	if (type == MDS_VOL_STRIPE) {
		if (su < MDS_POOL_MIN_STRIPE_UNIT || !pow2(su)) {
			proto_errf(why, whylen, 0, "stripe unit %llu is not a power of two >= 4 KiB",
				(unsigned long long)su);
			return -EINVAL;
		}
		if (su % bs) {
			proto_errf(why, whylen, 0, "stripe unit %llu is not a multiple of the block size %u",
				(unsigned long long)su, bs);
			return -EINVAL;
		}
		unit = su;
	} else if (type == MDS_VOL_CONCAT) {
		su = 0;
		unit = bs;
	} else {
		proto_errf(why, whylen, 0, "unknown volume type %d", (int)type);
		return -EINVAL;
	}
	for (uint32_t i = 0; i < nluns; i++) {
		uint64_t data;
		if (!lun_block_bytes[i] || bs % lun_block_bytes[i]) {
			proto_errf(why, whylen, 0, "LUN %u has %u-byte blocks: the block size %u is not a "
				"multiple of them", i, lun_block_bytes[i], bs);
			return -EINVAL;
		}
		if (lun_bytes[i] < MDS_LABEL_AREA_BYTES + unit) {
			proto_errf(why, whylen, 0, "LUN %u has %llu bytes: too small for a %u-byte label area "
				"and one %llu-byte unit", i, (unsigned long long)lun_bytes[i],
				MDS_LABEL_AREA_BYTES, (unsigned long long)unit);
			return -EINVAL;
		}
		data = (lun_bytes[i] - MDS_LABEL_AREA_BYTES) / unit * unit;
		out->luns[i].size_bytes = lun_bytes[i];
		out->luns[i].data_start_bytes = MDS_LABEL_AREA_BYTES;
		out->luns[i].data_bytes = data;
		if (data < common)
			common = data;
	}
	for (uint32_t i = 0; i < nluns; i++) {
		if (type == MDS_VOL_STRIPE)
			out->luns[i].data_bytes = common;
		total += out->luns[i].data_bytes;
	}
	memcpy(out->pool_uuid, pool_uuid, 16);
	out->block_bytes = bs;
	out->stripe_unit_bytes = su;
	out->volume_type = type;
	out->volume_bytes = total;
	out->nluns = nluns;
	return 0;
}

/* ---- UUIDs --------------------------------------------------------------------------------------- */

int mds_uuid_generate(uint8_t uuid[16])
{
	if (getrandom(uuid, 16, 0) != 16)
		return -EIO;
	uuid[6] = (uint8_t)((uuid[6] & 0x0f) | 0x40);
	uuid[8] = (uint8_t)((uuid[8] & 0x3f) | 0x80);
	return 0;
}

void mds_uuid_format(const uint8_t u[16], char out[37])
{
	snprintf(out, 37,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12],
		 u[13], u[14], u[15]);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int mds_uuid_parse(const char *s, uint8_t uuid[16])
{
	int n = 0;

	for (int i = 0; i < 36; i++) {
		int hi, lo;
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != '-')
				return -EINVAL;
			continue;
		}
		hi = hexval(s[i]);
		lo = hi < 0 ? -1 : hexval(s[i + 1]);
		if (hi < 0 || lo < 0)
			return -EINVAL;
		uuid[n++] = (uint8_t)(hi << 4 | lo);
		i++;
	}
	return s[36] == '\0' ? 0 : -EINVAL;
}
