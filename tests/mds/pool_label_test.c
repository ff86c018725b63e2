/* The pool's pure rules: CRC32C against published vectors, the LUN label (round trip, any damaged
 * byte rejected with a reason, inconsistent fields rejected), the signature that tells LUNs apart,
 * the geometry of stripes and concats, UUIDs, and pool.conf with line-numbered errors. */
#include "mds/pool.h"
#include "tests/harness.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static void test_crc32c_vectors(void)
{
	uint8_t buf[32];

	CU_ASSERT_EQUAL(mds_crc32c(0, "123456789", 9), 0xe3069283u);
	/* RFC 3720 appendix B.4. */
	memset(buf, 0, sizeof(buf));
	CU_ASSERT_EQUAL(mds_crc32c(0, buf, 32), 0x8a9136aau);
	memset(buf, 0xff, sizeof(buf));
	CU_ASSERT_EQUAL(mds_crc32c(0, buf, 32), 0x62a8ab43u);
	for (int i = 0; i < 32; i++)
		buf[i] = (uint8_t)i;
	CU_ASSERT_EQUAL(mds_crc32c(0, buf, 32), 0x46dd794eu);
	/* Chained pieces give the same result. */
	CU_ASSERT_EQUAL(mds_crc32c(mds_crc32c(0, buf, 13), buf + 13, 19), 0x46dd794eu);
	CU_ASSERT_EQUAL(mds_crc32c(0, buf, 0), 0);
}

static void sample_format(struct mds_store_format *f, uint32_t nluns)
{
	uint64_t sizes[8];
	uint32_t blocks[8];
	uint8_t uuid[16];

	for (uint32_t i = 0; i < nluns; i++) {
		sizes[i] = 64u << 20;
		blocks[i] = 512;
	}
	for (int i = 0; i < 16; i++)
		uuid[i] = (uint8_t)(0x10 * i + 1);
	CU_ASSERT_EQUAL_FATAL(mds_pool_plan(sizes, blocks, nluns, MDS_VOL_STRIPE, 1 << 20, 4096, uuid,
					    f, NULL, 0), 0);
}

static void test_label_roundtrip(void)
{
	struct mds_store_format f;
	struct mds_pool_label l, back;
	uint8_t buf[MDS_LABEL_BYTES];
	char why[256];

	sample_format(&f, 4);
	mds_label_from_format(&f, 2, 1700000000, &l);
	mds_label_encode(&l, buf);
	CU_ASSERT_EQUAL(memcmp(buf, "PNFSPOOL", 8), 0);
	CU_ASSERT(mds_label_present(buf, sizeof(buf)));
	CU_ASSERT_EQUAL(mds_label_decode(buf, sizeof(buf), &back, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(memcmp(back.pool_uuid, f.pool_uuid, 16), 0);
	CU_ASSERT_EQUAL(back.lun_index, 2);
	CU_ASSERT_EQUAL(back.lun_count, 4);
	CU_ASSERT_EQUAL(back.lun_bytes, 64u << 20);
	CU_ASSERT_EQUAL(back.data_start_bytes, 1u << 20);
	CU_ASSERT_EQUAL(back.data_bytes, 63u << 20);
	CU_ASSERT_EQUAL(back.stripe_unit_bytes, 1u << 20);
	CU_ASSERT_EQUAL(back.volume_type, MDS_VOL_STRIPE);
	CU_ASSERT_EQUAL(back.block_bytes, 4096);
	CU_ASSERT_EQUAL(back.volume_bytes, 4ull * (63u << 20));
	CU_ASSERT_EQUAL(back.format_time, 1700000000);
	CU_ASSERT_EQUAL(mds_label_check(&back, &f, 2, why, sizeof(why)), 0);
	/* Fixed offsets, as documented in the header: index at 32, CRC at 508. */
	CU_ASSERT_EQUAL(buf[32], 2);
	CU_ASSERT_EQUAL(buf[36], 4);
}

/* Every single damaged byte of a label is caught, and the reason says what. */
static void test_label_any_corrupt_byte(void)
{
	struct mds_store_format f;
	struct mds_pool_label l, back;
	uint8_t good[MDS_LABEL_BYTES], bad[MDS_LABEL_BYTES];
	char why[256];
	int enoent = 0, eproto = 0, ebadmsg = 0;

	sample_format(&f, 2);
	mds_label_from_format(&f, 1, 42, &l);
	mds_label_encode(&l, good);
	for (unsigned i = 0; i < MDS_LABEL_BYTES; i++) {
		for (int bit = 0; bit < 8; bit += 3) {
			int rc;
			memcpy(bad, good, sizeof(bad));
			bad[i] ^= (uint8_t)(1u << bit);
			why[0] = '\0';
			rc = mds_label_decode(bad, sizeof(bad), &back, why, sizeof(why));
			CU_ASSERT(rc < 0);
			CU_ASSERT(why[0] != '\0');
			enoent += rc == -ENOENT;
			eproto += rc == -EPROTONOSUPPORT;
			ebadmsg += rc == -EBADMSG;
			if (i < 8) {
				CU_ASSERT_EQUAL(rc, -ENOENT);
			} else if (i < 12) {
				CU_ASSERT_EQUAL(rc, -EPROTONOSUPPORT);
			} else if (i < 16) {
				CU_ASSERT_EQUAL(rc, -EBADMSG);
			} else {
				CU_ASSERT(rc == -EBADMSG && strstr(why, "checksum") != NULL);
			}
		}
	}
	CU_ASSERT(enoent > 0 && eproto > 0 && ebadmsg > 0);
	/* Short buffers. */
	CU_ASSERT_EQUAL(mds_label_decode(good, 100, &back, why, sizeof(why)), -EBADMSG);
	/* Zeros: simply no label. */
	memset(bad, 0, sizeof(bad));
	CU_ASSERT_EQUAL(mds_label_decode(bad, sizeof(bad), &back, why, sizeof(why)), -ENOENT);
	CU_ASSERT(!mds_label_present(bad, sizeof(bad)));
}

/* A label with a correct checksum but impossible contents is refused too. */
static void test_label_inconsistent(void)
{
	struct mds_store_format f;
	struct mds_pool_label l, back;
	uint8_t buf[MDS_LABEL_BYTES];
	char why[256];

	sample_format(&f, 2);
	mds_label_from_format(&f, 0, 0, &l);
	l.lun_index = 2;
	mds_label_encode(&l, buf);
	CU_ASSERT_EQUAL(mds_label_decode(buf, sizeof(buf), &back, why, sizeof(why)), -EBADMSG);
	CU_ASSERT(strstr(why, "index") != NULL);
	mds_label_from_format(&f, 0, 0, &l);
	l.data_bytes = l.lun_bytes;
	mds_label_encode(&l, buf);
	CU_ASSERT_EQUAL(mds_label_decode(buf, sizeof(buf), &back, why, sizeof(why)), -EBADMSG);
	CU_ASSERT(strstr(why, "data area") != NULL);
	mds_label_from_format(&f, 0, 0, &l);
	l.stripe_unit_bytes = 3 << 12;
	mds_label_encode(&l, buf);
	CU_ASSERT_EQUAL(mds_label_decode(buf, sizeof(buf), &back, why, sizeof(why)), -EBADMSG);
	CU_ASSERT(strstr(why, "stripe unit") != NULL);
	mds_label_from_format(&f, 0, 0, &l);
	l.volume_type = (enum mds_volume_type)7;
	mds_label_encode(&l, buf);
	CU_ASSERT_EQUAL(mds_label_decode(buf, sizeof(buf), &back, why, sizeof(why)), -EBADMSG);
	/* A reserved byte set, with a checksum that matches (found by the fuzz target). */
	mds_label_from_format(&f, 0, 0, &l);
	mds_label_encode(&l, buf);
	buf[331] = 0x52;
	{
		uint32_t crc = mds_crc32c(0, buf, MDS_LABEL_BYTES - 4);
		for (int i = 0; i < 4; i++)
			buf[MDS_LABEL_BYTES - 4 + i] = (uint8_t)(crc >> (8 * i));
	}
	CU_ASSERT_EQUAL(mds_label_decode(buf, sizeof(buf), &back, why, sizeof(why)), -EBADMSG);
	CU_ASSERT(strstr(why, "reserved") != NULL);
	mds_label_from_format(&f, 0, 0, &l);
	l.volume_bytes = l.data_bytes;
	mds_label_encode(&l, buf);
	CU_ASSERT_EQUAL(mds_label_decode(buf, sizeof(buf), &back, why, sizeof(why)), -EBADMSG);
	CU_ASSERT(strstr(why, "volume size") != NULL);
}

static void test_label_check_against_store(void)
{
	struct mds_store_format f, other;
	struct mds_pool_label l;
	char why[256];

	sample_format(&f, 4);
	other = f;
	other.pool_uuid[0] ^= 1;
	mds_label_from_format(&other, 1, 0, &l);
	CU_ASSERT_EQUAL(mds_label_check(&l, &f, 1, why, sizeof(why)), -EINVAL);
	CU_ASSERT(strstr(why, "labelled for pool") != NULL);
	mds_label_from_format(&f, 1, 0, &l);
	CU_ASSERT_EQUAL(mds_label_check(&l, &f, 2, why, sizeof(why)), -EINVAL);
	CU_ASSERT(strstr(why, "LUN 1 of 4, expected LUN 2 of 4") != NULL);
	l.data_bytes -= 1 << 20;
	CU_ASSERT_EQUAL(mds_label_check(&l, &f, 1, why, sizeof(why)), -EINVAL);
	CU_ASSERT(strstr(why, "geometry") != NULL);
}

static void test_signature_identifies_lun(void)
{
	struct mds_store_format f, g;
	struct mds_pool_label l[4], lg;
	uint8_t sig[4][MDS_LABEL_SIG_BYTES], sg[MDS_LABEL_SIG_BYTES], enc[MDS_LABEL_BYTES];
	int64_t off;
	size_t len;

	sample_format(&f, 4);
	for (uint32_t i = 0; i < 4; i++) {
		mds_label_from_format(&f, i, 1000 + i, &l[i]);
		mds_label_signature(&l[i], &off, sig[i], &len);
		CU_ASSERT_EQUAL(off, MDS_LABEL_SIG_OFFSET);
		CU_ASSERT_EQUAL(len, MDS_LABEL_SIG_BYTES);
		/* The signature is what the LUN holds at that offset. */
		mds_label_encode(&l[i], enc);
		CU_ASSERT_EQUAL(memcmp(enc + off, sig[i], len), 0);
	}
	for (int i = 0; i < 4; i++)
		for (int j = i + 1; j < 4; j++)
			CU_ASSERT(memcmp(sig[i], sig[j], MDS_LABEL_SIG_BYTES) != 0);
	/* Another pool's LUN 0 differs; the same LUN relabelled at another time does not. */
	g = f;
	g.pool_uuid[15] ^= 0x80;
	mds_label_from_format(&g, 0, 1000, &lg);
	mds_label_signature(&lg, &off, sg, &len);
	CU_ASSERT(memcmp(sg, sig[0], MDS_LABEL_SIG_BYTES) != 0);
	mds_label_from_format(&f, 0, 99999, &lg);
	mds_label_signature(&lg, &off, sg, &len);
	CU_ASSERT_EQUAL(memcmp(sg, sig[0], MDS_LABEL_SIG_BYTES), 0);
}

static void test_plan_geometry(void)
{
	uint64_t sizes[4] = { 64u << 20, 100u << 20, (64u << 20) + 12345, 80u << 20 };
	uint32_t blocks[4] = { 512, 512, 512, 4096 };
	uint8_t uuid[16] = { 1 };
	struct mds_store_format f;
	char why[256];

	/* Stripe: every slice the smallest data length, rounded down to the unit. */
	CU_ASSERT_EQUAL(mds_pool_plan(sizes, blocks, 4, MDS_VOL_STRIPE, 1 << 20, 4096, uuid, &f, why,
				      sizeof(why)), 0);
	for (int i = 0; i < 4; i++) {
		CU_ASSERT_EQUAL(f.luns[i].data_start_bytes, 1u << 20);
		CU_ASSERT_EQUAL(f.luns[i].data_bytes, 63u << 20);
		CU_ASSERT_EQUAL(f.luns[i].size_bytes, sizes[i]);
	}
	CU_ASSERT_EQUAL(f.volume_bytes, 4ull * (63u << 20));
	CU_ASSERT_EQUAL(f.nluns, 4);
	CU_ASSERT_EQUAL(f.stripe_unit_bytes, 1u << 20);
	CU_ASSERT_EQUAL(f.pool_uuid[0], 1);
	/* Concat: each LUN its own length rounded down to the block. */
	CU_ASSERT_EQUAL(mds_pool_plan(sizes, blocks, 4, MDS_VOL_CONCAT, 0, 4096, uuid, &f, why,
				      sizeof(why)), 0);
	CU_ASSERT_EQUAL(f.luns[1].data_bytes, 99u << 20);
	CU_ASSERT_EQUAL(f.luns[2].data_bytes, (63u << 20) + 12288);
	CU_ASSERT_EQUAL(f.volume_bytes, (63u << 20) + (99u << 20) + (63u << 20) + 12288 + (79u << 20));
	CU_ASSERT_EQUAL(f.stripe_unit_bytes, 0);
	/* Refusals, each with a reason. */
	CU_ASSERT_EQUAL(mds_pool_plan(sizes, blocks, 4, MDS_VOL_STRIPE, 3 << 12, 4096, uuid, &f, why,
				      sizeof(why)), -EINVAL);
	CU_ASSERT(strstr(why, "power of two") != NULL);
	CU_ASSERT_EQUAL(mds_pool_plan(sizes, blocks, 4, MDS_VOL_STRIPE, 2048, 512, uuid, &f, why,
				      sizeof(why)), -EINVAL);
	CU_ASSERT_EQUAL(mds_pool_plan(sizes, blocks, 4, MDS_VOL_STRIPE, 4096, 8192, uuid, &f, why,
				      sizeof(why)), -EINVAL);
	CU_ASSERT(strstr(why, "multiple of the block size") != NULL);
	CU_ASSERT_EQUAL(mds_pool_plan(sizes, blocks, 4, MDS_VOL_STRIPE, 1 << 20, 1000, uuid, &f, why,
				      sizeof(why)), -EINVAL);
	CU_ASSERT_EQUAL(mds_pool_plan(sizes, blocks, 4, MDS_VOL_STRIPE, 1 << 20, 512, uuid, &f, why,
				      sizeof(why)), -EINVAL);
	CU_ASSERT(strstr(why, "LUN 3 has 4096-byte blocks") != NULL);
	sizes[1] = (1u << 20) + 4096;
	CU_ASSERT_EQUAL(mds_pool_plan(sizes, blocks, 4, MDS_VOL_STRIPE, 1 << 20, 4096, uuid, &f, why,
				      sizeof(why)), -EINVAL);
	CU_ASSERT(strstr(why, "LUN 1") != NULL && strstr(why, "too small") != NULL);
	CU_ASSERT_EQUAL(mds_pool_plan(sizes, blocks, 0, MDS_VOL_STRIPE, 1 << 20, 4096, uuid, &f, why,
				      sizeof(why)), -EINVAL);
}

static void test_uuid(void)
{
	uint8_t a[16], b[16], c[16];
	char s[37];

	CU_ASSERT_EQUAL(mds_uuid_generate(a), 0);
	CU_ASSERT_EQUAL(mds_uuid_generate(b), 0);
	CU_ASSERT(memcmp(a, b, 16) != 0);
	CU_ASSERT_EQUAL(a[6] >> 4, 4);
	CU_ASSERT_EQUAL(a[8] >> 6, 2);
	mds_uuid_format(a, s);
	CU_ASSERT_EQUAL(strlen(s), 36);
	CU_ASSERT_EQUAL(s[14], '4');
	CU_ASSERT_EQUAL(mds_uuid_parse(s, c), 0);
	CU_ASSERT_EQUAL(memcmp(a, c, 16), 0);
	CU_ASSERT_EQUAL(mds_uuid_parse("0123", c), -EINVAL);
	CU_ASSERT_EQUAL(mds_uuid_parse("01234567-89ab-cdef-0123-456789abcdeg", c), -EINVAL);
	CU_ASSERT_EQUAL(mds_uuid_parse("01234567-89ab-cdef-0123-456789abcdef0", c), -EINVAL);
	CU_ASSERT_EQUAL(mds_uuid_parse("01234567-89AB-cdef-0123-456789abcdef", c), 0);
	CU_ASSERT_EQUAL(c[4], 0x89);
}

static void test_conf_parse(void)
{
	struct mds_pool_conf c;
	char err[256];
	const char *good = "# a pool\n"
			   "\n"
			   "pool 01234567-89ab-cdef-0123-456789abcdef\r\n"
			   "lun 1 iscsi://127.0.0.1:3261/iqn.2024-01.lab:t/2\n"
			   "  lun\t0   iscsi://user%secret@127.0.0.1:3261/iqn.2024-01.lab:t/1  \n"
			   "lun 2 /dev/loop7";

	CU_ASSERT_EQUAL(mds_pool_conf_parse(good, "pool.conf", &c, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(c.nluns, 3);
	CU_ASSERT_STRING_EQUAL(c.urls[0], "iscsi://user%secret@127.0.0.1:3261/iqn.2024-01.lab:t/1");
	CU_ASSERT_STRING_EQUAL(c.urls[1], "iscsi://127.0.0.1:3261/iqn.2024-01.lab:t/2");
	CU_ASSERT_STRING_EQUAL(c.urls[2], "/dev/loop7");
	CU_ASSERT(c.have_uuid);
	CU_ASSERT_EQUAL(c.pool_uuid[0], 0x01);
	mds_pool_conf_free(&c);

	struct {
		const char *text, *msg;
	} bad[] = {
		{ "lun 0 a\nfrob 1 b\n", "pool.conf:2: unknown keyword 'frob'" },
		{ "lun 0\n", "pool.conf:1: expected 'lun INDEX URL'" },
		{ "lun 0 a b\n", "pool.conf:1: expected 'lun INDEX URL'" },
		{ "lun x a\n", "pool.conf:1: LUN index 'x'" },
		{ "lun -1 a\n", "pool.conf:1: LUN index '-1'" },
		{ "lun 999 a\n", "pool.conf:1: LUN index '999'" },
		{ "lun 0 a\n#\nlun 0 b\n", "pool.conf:3: LUN 0 listed twice" },
		{ "lun 0 a\nlun 1 a\n", "pool.conf:2: a is already LUN 0" },
		{ "lun 0 a\nlun 2 c\n", "pool.conf: LUN 1 missing" },
		{ "# nothing\n", "pool.conf: no 'lun' lines" },
		{ "pool nope\nlun 0 a\n", "pool.conf:1: 'nope' is not a UUID" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		CU_ASSERT_EQUAL(mds_pool_conf_parse(bad[i].text, "pool.conf", &c, err, sizeof(err)), -EINVAL);
		CU_ASSERT(strncmp(err, bad[i].msg, strlen(bad[i].msg)) == 0);
		if (strncmp(err, bad[i].msg, strlen(bad[i].msg)))
			fprintf(stderr, "case %zu: got '%s', want '%s'\n", i, err, bad[i].msg);
		mds_pool_conf_free(&c);
	}
}

static void test_conf_write_read(void)
{
	const char *dir = test_tmpdir("pool-conf");
	struct mds_pool_conf c, back;
	char err[256], path[512];
	struct stat sb;

	memset(&c, 0, sizeof(c));
	c.nluns = 2;
	c.urls[0] = strdup("iscsi://u%p@h:1/iqn.x:y/1");
	c.urls[1] = strdup("iscsi://h:1/iqn.x:y/2");
	c.have_uuid = 1;
	for (int i = 0; i < 16; i++)
		c.pool_uuid[i] = (uint8_t)i;
	CU_ASSERT_EQUAL(mds_pool_conf_read(dir, &back, err, sizeof(err)), -ENOENT);
	mds_pool_conf_free(&back);
	CU_ASSERT_EQUAL(mds_pool_conf_write(dir, &c, err, sizeof(err)), 0);
	snprintf(path, sizeof(path), "%s/pool.conf", dir);
	CU_ASSERT_EQUAL(stat(path, &sb), 0);
	CU_ASSERT_EQUAL(sb.st_mode & 0777, 0600);
	CU_ASSERT_EQUAL(mds_pool_conf_read(dir, &back, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(back.nluns, 2);
	CU_ASSERT_STRING_EQUAL(back.urls[0], c.urls[0]);
	CU_ASSERT_STRING_EQUAL(back.urls[1], c.urls[1]);
	CU_ASSERT(back.have_uuid);
	CU_ASSERT_EQUAL(memcmp(back.pool_uuid, c.pool_uuid, 16), 0);
	mds_pool_conf_free(&back);
	mds_pool_conf_free(&c);
}

TEST_SUITE(pool_label, "mds/pool_label", NULL, NULL,
	   { "crc32c_vectors", test_crc32c_vectors },
	   { "label_roundtrip", test_label_roundtrip },
	   { "label_any_corrupt_byte", test_label_any_corrupt_byte },
	   { "label_inconsistent", test_label_inconsistent },
	   { "label_check_against_store", test_label_check_against_store },
	   { "signature_identifies_lun", test_signature_identifies_lun },
	   { "plan_geometry", test_plan_geometry },
	   { "uuid", test_uuid },
	   { "conf_parse", test_conf_parse },
	   { "conf_write_read", test_conf_write_read });
