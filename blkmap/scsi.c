/* SCSI by hand: the few CDBs blkmap sends besides READ/WRITE (INQUIRY, READ CAPACITY 16, PERSISTENT
 * RESERVE IN/OUT), parsers for their responses and for VPD pages 0x80/0x83/0xB0 (also read from sysfs
 * for local disks), and the mapping of SCSI status and sense to -errno. Every parser checks the
 * length it was given before reading. */
#include "blkmap/internal.h"

#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>
#include <stdio.h>
#include <string.h>

static uint16_t be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t be64(const uint8_t *p)
{
	return (uint64_t)be32(p) << 32 | be32(p + 4);
}

static void put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static void put_be64(uint8_t *p, uint64_t v)
{
	put_be32(p, (uint32_t)(v >> 32));
	put_be32(p + 4, (uint32_t)v);
}

void bm_cdb_inquiry(struct bm_cmd *cmd, int evpd, int page, uint16_t alloc)
{
	memset(cmd->cdb, 0, sizeof(cmd->cdb));
	cmd->cdb[0] = 0x12;
	cmd->cdb[1] = evpd ? 1 : 0;
	cmd->cdb[2] = (uint8_t)page;
	put_be16(cmd->cdb + 3, alloc);
	cmd->cdb_len = 6;
}

void bm_cdb_readcap16(struct bm_cmd *cmd)
{
	memset(cmd->cdb, 0, sizeof(cmd->cdb));
	cmd->cdb[0] = 0x9e;
	cmd->cdb[1] = 0x10;
	put_be32(cmd->cdb + 10, 32);
	cmd->cdb_len = 16;
}

void bm_cdb_read16(struct bm_cmd *cmd, uint64_t lba, uint32_t blocks)
{
	memset(cmd->cdb, 0, sizeof(cmd->cdb));
	cmd->cdb[0] = 0x88;
	put_be64(cmd->cdb + 2, lba);
	put_be32(cmd->cdb + 10, blocks);
	cmd->cdb_len = 16;
}

void bm_cdb_prin(struct bm_cmd *cmd, int sa, uint16_t alloc)
{
	memset(cmd->cdb, 0, sizeof(cmd->cdb));
	cmd->cdb[0] = 0x5e;
	cmd->cdb[1] = (uint8_t)(sa & 0x1f);
	put_be16(cmd->cdb + 7, alloc);
	cmd->cdb_len = 10;
}

void bm_cdb_prout(struct bm_cmd *cmd, const struct blkmap_pr_out *a, uint8_t param[24])
{
	memset(cmd->cdb, 0, sizeof(cmd->cdb));
	cmd->cdb[0] = 0x5f;
	cmd->cdb[1] = (uint8_t)(a->action & 0x1f);
	/* scope 0 (logical unit) in the high nibble, type in the low one */
	cmd->cdb[2] = (uint8_t)(a->type & 0x0f);
	put_be32(cmd->cdb + 5, 24);
	cmd->cdb_len = 10;
	memset(param, 0, 24);
	put_be64(param, a->key);
	put_be64(param + 8, a->sa_key);
	param[20] = a->aptpl ? 1 : 0;
}

static void copy_trim(char *dst, size_t dstlen, const uint8_t *src, size_t n)
{
	size_t s = 0, e = n;
	while (s < e && (src[s] == ' ' || src[s] == 0))
		s++;
	while (e > s && (src[e - 1] == ' ' || src[e - 1] == 0))
		e--;
	if (e - s >= dstlen)
		e = s + dstlen - 1;
	for (size_t i = s; i < e; i++)
		dst[i - s] = (src[i] >= 0x20 && src[i] < 0x7f) ? (char)src[i] : '?';
	dst[e - s] = 0;
}

int bm_parse_std_inquiry(const uint8_t *d, uint32_t len, struct blkmap_inquiry *inq)
{
	if (len < 36)
		return -EPROTO;
	inq->device_type = d[0] & 0x1f;
	copy_trim(inq->vendor, sizeof(inq->vendor), d + 8, 8);
	copy_trim(inq->product, sizeof(inq->product), d + 16, 16);
	copy_trim(inq->revision, sizeof(inq->revision), d + 32, 4);
	return 0;
}

int bm_parse_vpd80(const uint8_t *d, uint32_t len, struct blkmap_inquiry *inq)
{
	uint32_t n;
	if (len < 4 || d[1] != 0x80)
		return -EPROTO;
	n = be16(d + 2);
	if (n > len - 4)
		n = len - 4;
	copy_trim(inq->serial, sizeof(inq->serial), d + 4, n);
	return 0;
}

int bm_parse_vpd83(const uint8_t *d, uint32_t len, struct blkmap_inquiry *inq)
{
	uint32_t n, o = 4;
	if (len < 4 || d[1] != 0x83)
		return -EPROTO;
	n = be16(d + 2);
	if (n > len - 4)
		n = len - 4;
	inq->ndesig = 0;
	while (o + 4 <= 4 + n) {
		uint8_t dl = d[o + 3];
		struct blkmap_designator *x;
		if (o + 4 + dl > 4 + n)
			return -EPROTO;
		if (inq->ndesig < BLKMAP_MAX_DESIGNATORS) {
			x = &inq->desig[inq->ndesig++];
			x->code_set = d[o] & 0x0f;
			x->association = (d[o + 1] >> 4) & 0x03;
			x->type = d[o + 1] & 0x0f;
			x->len = dl;
			memcpy(x->bytes, d + o + 4, dl);
		}
		o += 4u + dl;
	}
	return 0;
}

int bm_parse_vpdb0(const uint8_t *d, uint32_t len, uint32_t *max_blocks)
{
	if (len < 12 || d[1] != 0xb0)
		return -EPROTO;
	*max_blocks = be32(d + 8);
	return 0;
}

int bm_parse_readcap16(const uint8_t *d, uint32_t len, uint64_t *blocks, uint32_t *block_bytes)
{
	if (len < 12)
		return -EPROTO;
	*blocks = be64(d) + 1;
	*block_bytes = be32(d + 8);
	if (*block_bytes < 512 || *block_bytes > 65536 || (*block_bytes & (*block_bytes - 1)))
		return -EPROTO;
	return 0;
}

/* The header of PERSISTENT RESERVE IN parameter data, for a result out of size bytes that it
 * clears first: PRgeneration (into out) and the additional length. */
static int pr_in_header(const uint8_t *d, uint32_t len, void *out, size_t size, uint32_t *generation,
			uint32_t *addl)
{
	if (len < 8)
		return -EPROTO;
	memset(out, 0, size);
	*generation = be32(d);
	*addl = be32(d + 4);
	return 0;
}

int bm_parse_read_keys(const uint8_t *d, uint32_t len, struct blkmap_pr_keys *out)
{
	uint32_t addl;

	if (pr_in_header(d, len, out, sizeof(*out), &out->generation, &addl))
		return -EPROTO;
	out->total = addl / 8;
	for (uint32_t o = 8; o + 8 <= len && o + 8 <= 8 + (uint64_t)addl && out->nkeys < BLKMAP_PR_MAX_KEYS; o += 8)
		out->keys[out->nkeys++] = be64(d + o);
	return 0;
}

int bm_parse_read_resv(const uint8_t *d, uint32_t len, struct blkmap_pr_reservation *out)
{
	uint32_t addl;

	if (pr_in_header(d, len, out, sizeof(*out), &out->generation, &addl))
		return -EPROTO;
	if (addl == 0)
		return 0;
	if (addl < 16 || len < 24)
		return -EPROTO;
	out->reserved = 1;
	out->key = be64(d + 8);
	out->scope = (d[21] >> 4) & 0x0f;
	out->type = (enum blkmap_pr_type)(d[21] & 0x0f);
	return 0;
}

int bm_parse_report_caps(const uint8_t *d, uint32_t len, struct blkmap_pr_caps *out)
{
	if (len < 8 || be16(d) < 8)
		return -EPROTO;
	memset(out, 0, sizeof(*out));
	out->crh = (d[2] >> 4) & 1;
	out->sip_c = (d[2] >> 3) & 1;
	out->atp_c = (d[2] >> 2) & 1;
	out->ptpl_c = d[2] & 1;
	out->tmv = (d[3] >> 7) & 1;
	out->ptpl_a = d[3] & 1;
	out->type_mask = be16(d + 4);
	return 0;
}

int bm_parse_report_luns(const uint8_t *d, uint32_t len, unsigned *luns, unsigned max)
{
	uint64_t end;
	unsigned n = 0;

	if (len < 8)
		return -EPROTO;
	end = 8 + (uint64_t)be32(d); /* the list length, clipped to what arrived */
	if (end > len)
		end = len;
	for (uint64_t o = 8; o + 8 <= end && n < max; o += 8) {
		unsigned method = d[o] >> 6;
		if (method > 1)
			continue; /* logical unit or extended addressing: no 14-bit number for an iscsi:// URL */
		luns[n++] = ((unsigned)(d[o] & 0x3f) << 8) | d[o + 1];
	}
	return (int)n;
}

int bm_scsi_status(int status, int sense_key, int ascq, char *msg, size_t len, int *retry)
{
	*retry = 0;
	switch (status) {
	case SCSI_STATUS_GOOD:
	case SCSI_STATUS_CONDITION_MET:
		return 0;
	case SCSI_STATUS_RESERVATION_CONFLICT:
		snprintf(msg, len, "RESERVATION CONFLICT");
		return -EBADE;
	case SCSI_STATUS_BUSY:
	case SCSI_STATUS_TASK_SET_FULL:
		snprintf(msg, len, "%s", status == SCSI_STATUS_BUSY ? "BUSY" : "TASK SET FULL");
		*retry = 1;
		return -EBUSY;
	case SCSI_STATUS_CHECK_CONDITION: {
		const char *k = scsi_sense_key_str(sense_key);
		const char *a = scsi_sense_ascq_str(ascq);
		snprintf(msg, len, "CHECK CONDITION %s, ASC/ASCQ %02x/%02x%s%s", k ? k : "?", (ascq >> 8) & 0xff,
			 ascq & 0xff, a ? " " : "", a ? a : "");
		switch (sense_key) {
		case SCSI_SENSE_UNIT_ATTENTION:
			*retry = 1;
			return -EAGAIN;
		case SCSI_SENSE_NOT_READY:
			return -EAGAIN;
		case SCSI_SENSE_ILLEGAL_REQUEST:
			return ascq == SCSI_SENSE_ASCQ_LBA_OUT_OF_RANGE ? -ERANGE : -EINVAL;
		case SCSI_SENSE_DATA_PROTECTION:
			return -EROFS;
		case SCSI_SENSE_COMMAND_ABORTED:
			*retry = 1;
			return -EIO;
		default:
			return -EIO;
		}
	}
	case SCSI_STATUS_TASK_ABORTED:
		snprintf(msg, len, "TASK ABORTED");
		*retry = 1;
		return -EIO;
	default:
		snprintf(msg, len, "SCSI status 0x%02x", status);
		return -EIO;
	}
}
