/* pnfs-extents pnfs://HOST[:PORT]/PATH: a file's extent map as the server's layout gives it, asked
 * for exactly as a client asks (LAYOUTGET in READ iomode, GETDEVICEINFO, blkmap resolution), so it
 * works against any block-layout MDS. The reference for --verify is a second mount that never uses
 * layouts: its READs go through the MDS, a path that shares nothing with the LUN reads compared. */
#include "tools/extents.h"

#include "blkmap/blkmap.h"
#include "client/pnfs.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LAYOUT4_BLOCK_VOLUME_TYPE 3
#define LAYOUT4_SCSI_TYPE 5

struct tool_mds {
	struct tool_mds_opts o;
	struct pnfs_url url;
	struct pnfs_context *ctx, *mds_ctx;   /* layouts; MDS I/O only (for --verify) */
	struct pnfs_fh *fh, *mds_fh;
};

static int mount_one(struct tool_mds *s, int mds_io, struct pnfs_context **out, char *err, size_t errlen)
{
	struct pnfs_opts po;
	struct pnfs_context *ctx = NULL;
	int rc;

	pnfs_opts_init(&po);
	po.mds_io = mds_io;
	po.portals = s->o.portals;
	po.nportals = s->o.nportals;
	po.devices = s->o.devices;
	po.ndevices = s->o.ndevices;
	po.scan_local = s->o.scan_local;
	po.initiator_name = s->o.initiator;
	po.io_timeout_ms = (s->o.timeout_s ? s->o.timeout_s : 10) * 1000;
	rc = pnfs_context_create(&po, &ctx);
	if (rc)
		return proto_errf(err, errlen, rc, "cannot create a client context: %s", strerror(-rc));
	rc = pnfs_mount(ctx, s->url.host, s->url.port, "/");
	if (rc) {
		proto_errf(err, errlen, rc, "mounting %s:%d: %s", s->url.host, s->url.port, pnfs_get_error(ctx));
		pnfs_context_destroy(ctx);
		return rc;
	}
	*out = ctx;
	return 0;
}

static void unmount_one(struct pnfs_context *ctx, struct pnfs_fh *fh)
{
	if (!ctx)
		return;
	if (fh)
		pnfs_close(ctx, fh);
	pnfs_umount(ctx);
	pnfs_context_destroy(ctx);
}

/* The layout type a client would use: SCSI when offered (its LUNs may be reserved for registered
 * initiators only, so the tool registers the key the server hands out, as every client must), else
 * block volume. */
static int mount_layouts(struct tool_mds *s, uint32_t *blksize, char *err, size_t errlen)
{
	struct pnfs_statfs sf;
	int usable = 0, rc;

	rc = mount_one(s, 0, &s->ctx, err, errlen);
	if (rc)
		return rc;
	rc = pnfs_statfs(s->ctx, "/", &sf);
	if (rc)
		return proto_errf(err, errlen, rc, "%s:%d: asking for the file system's layout types: %s", s->url.host,
				 s->url.port, pnfs_get_error(s->ctx));
	for (unsigned i = 0; i < sf.nlayout_types && i < 8; i++)
		usable |= sf.layout_types[i] == LAYOUT4_BLOCK_VOLUME_TYPE || sf.layout_types[i] == LAYOUT4_SCSI_TYPE;
	*blksize = sf.layout_blksize;
	if (!usable)
		return proto_errf(err, errlen, -EOPNOTSUPP,
				 "%s:%d offers no block or SCSI layouts (fs_layout_types has %u other type%s): "
				 "every byte goes through the MDS, there is no extent map to show",
				 s->url.host, s->url.port, sf.nlayout_types, sf.nlayout_types == 1 ? "" : "s");
	return 0;
}

/* An unresolved volume still maps volume offsets to leaf offsets: a copy of it whose leaves are given
 * the size their slices need. */
static int offline_copy(struct blkmap_vol *vol, struct blkmap_vol **out, char *err, size_t errlen)
{
	char *text = NULL, perr[300];
	struct blkmap_vol *copy = NULL;
	unsigned count;
	int rc = blkmap_vol_format_text(vol, &text);

	if (rc)
		return proto_errf(err, errlen, rc, "the device's volume: %s", strerror(-rc));
	rc = blkmap_vol_parse_text(text, &copy, perr, sizeof(perr));
	free(text);
	if (rc)
		return proto_errf(err, errlen, rc, "the device's volume: %s", perr);
	count = blkmap_vol_count(copy);
	for (uint32_t i = 0; i < count; i++) {
		uint64_t need = 0;
		if (!blkmap_vol_is_leaf(copy, i))
			continue;
		for (uint32_t j = 0; j < count; j++)
			if (blkmap_vol_type(copy, j) == BLKMAP_VOL_SLICE && blkmap_vol_member(copy, j, 0) == i &&
			    blkmap_vol_slice_start(copy, j) + blkmap_vol_slice_length(copy, j) > need)
				need = blkmap_vol_slice_start(copy, j) + blkmap_vol_slice_length(copy, j);
		if (!need) {
			blkmap_vol_free(copy);
			return proto_errf(err, errlen, -ENODEV,
					 "the device's LUNs were not found, and volume %u has no slice to size it by",
					 i);
		}
		blkmap_vol_set_leaf_size(copy, i, need);
	}
	rc = blkmap_vol_validate(copy);
	if (rc) {
		proto_errf(err, errlen, rc, "the device's volume: %s", blkmap_vol_errstr(copy));
		blkmap_vol_free(copy);
		return rc;
	}
	*out = copy;
	return 0;
}

static int hexid(const uint8_t id[16], char *out, size_t len)
{
	for (int i = 0; i < 16 && (size_t)(2 * i + 2) < len; i++)
		snprintf(out + 2 * i, 3, "%02x", id[i]);
	return 0;
}

/* The volume the data extents point into, and the map's LUNs named by it. */
static int take_device(struct tool_mds *s, struct tool_map *m, const struct pnfs_extent *ext, size_t n,
		       char *err, size_t errlen)
{
	const uint8_t *id = NULL;
	struct blkmap_vol *vol = NULL;
	const char *why = "";
	char hex[40];
	int ready, rc;

	for (size_t i = 0; i < n; i++) {
		if (ext[i].state == PNFS_EXT_NONE)
			continue;
		if (!id)
			id = ext[i].deviceid;
		else if (memcmp(id, ext[i].deviceid, 16) != 0)
			return proto_errf(err, errlen, -EOPNOTSUPP,
					 "the layout's extents lie on more than one device (extent %zu at file "
					 "offset %" PRIu64 "): one volume per map is shown; look at a part with "
					 "--offset/--length",
					 i, ext[i].file_offset);
	}
	if (!id)
		return 0; /* holes only: nothing to map */
	hexid(id, hex, sizeof(hex));
	ready = pnfs_device_info(s->ctx, id, &vol, &why);
	if (ready < 0 || !vol)
		return proto_errf(err, errlen, -ENODEV, "device %s: %s", hex, why);
	if (ready) {
		rc = tool_map_set_volume(m, vol, 0);
		if (rc)
			return proto_errf(err, errlen, rc, "device %s: %s", hex, strerror(-rc));
		for (uint32_t i = 0; i < m->nluns; i++) {
			struct blkmap_dev *dev = blkmap_vol_leaf_dev(vol, m->luns[i].leaf);
			if (dev)
				tool_map_name_lun(m, i, blkmap_dev_name(dev), blkmap_dev_block_bytes(dev), dev);
			else
				snprintf(m->luns[i].why, sizeof(m->luns[i].why), "no device bound");
		}
		return 0;
	}
	/* Not resolved: still show volume offsets and leaf offsets, in 512-byte sectors. */
	{
		struct blkmap_vol *copy = NULL;
		rc = offline_copy(vol, &copy, err, errlen);
		if (rc)
			return rc;
		rc = tool_map_set_volume(m, copy, 1);
		if (rc) {
			blkmap_vol_free(copy);
			return proto_errf(err, errlen, rc, "device %s: %s", hex, strerror(-rc));
		}
		for (uint32_t i = 0; i < m->nluns; i++)
			snprintf(m->luns[i].why, sizeof(m->luns[i].why), "not found: %s", why);
		snprintf(m->note, sizeof(m->note), "the device's LUNs were not found (%.150s): LBAs are 512-byte "
			 "sectors of its volume leaves", why);
	}
	return 0;
}

int tool_mds_load(const char *url, const struct tool_mds_opts *o, uint64_t off, uint64_t len,
		  struct tool_map *m, struct tool_mds **out, char *err, size_t errlen)
{
	struct tool_mds *s = calloc(1, sizeof(*s));
	struct pnfs_extent *ext = NULL;
	struct pnfs_stat st;
	uint32_t blksize = 0;
	size_t n = 0;
	int rc;

	*out = NULL;
	if (!s)
		return proto_errf(err, errlen, -ENOMEM, "out of memory");
	s->o = *o;
	if (pnfs_parse_url(url, &s->url)) {
		free(s);
		return proto_errf(err, errlen, -EINVAL, "%s: not a pnfs://HOST[:PORT]/PATH URL", url);
	}
	*out = s;
	snprintf(m->source, sizeof(m->source), "mds");
	snprintf(m->where, sizeof(m->where), "%s:%d", s->url.host, s->url.port);
	snprintf(m->path, sizeof(m->path), "%s", s->url.path);
	rc = mount_layouts(s, &blksize, err, errlen);
	if (rc)
		return rc;
	rc = pnfs_open(s->ctx, s->url.path, O_RDONLY, 0, &s->fh);
	if (rc)
		return proto_errf(err, errlen, rc, "%s", pnfs_get_error(s->ctx));
	rc = pnfs_fstat(s->ctx, s->fh, &st);
	if (rc)
		return proto_errf(err, errlen, rc, "%s", pnfs_get_error(s->ctx));
	if (st.type != PNFS_REG)
		return proto_errf(err, errlen, -EINVAL, "%s: not a regular file: only regular files have extents",
				 s->url.path);
	m->fileid = st.fileid;
	m->size = st.size;
	m->block_bytes = blksize;
	/* The range, rounded out to whole layout blocks. */
	tool_map_set_range(m, off, len, st.size, blksize ? blksize : 4096);
	if (m->range_len) {
		rc = pnfs_layout_extents(s->ctx, s->fh, m->range_off, m->range_len, &ext, &n);
		if (rc)
			return proto_errf(err, errlen, rc, "%s", pnfs_get_error(s->ctx));
	}
	rc = take_device(s, m, ext, n, err, errlen);
	{
		char lun_note[sizeof(m->note)];
		snprintf(lun_note, sizeof(lun_note), "%s", m->note);
		snprintf(m->note, sizeof(m->note), "READ-iomode layout: data shows as READ, never-written blocks "
			 "as NONE%s%s", lun_note[0] ? "; " : "", lun_note);
	}
	for (size_t i = 0; !rc && i < n; i++)
		rc = tool_map_add(m, ext[i].file_offset, ext[i].length, ext[i].storage_offset, (int)ext[i].state);
	free(ext);
	if (rc)
		return err && err[0] ? rc : proto_errf(err, errlen, rc, "%s", strerror(-rc));
	return tool_map_resolve(m, err, errlen);
}

static long long mds_read(void *arg, uint64_t off, void *buf, size_t len, char *why, size_t whylen)
{
	struct tool_mds *s = arg;
	size_t done = 0;

	while (done < len) {
		ssize_t got = pnfs_pread(s->mds_ctx, s->mds_fh, (char *)buf + done, len - done, off + done);
		if (got < 0) {
			snprintf(why, whylen, "reading through the MDS at %" PRIu64 ": %s", off + done,
				 pnfs_get_error(s->mds_ctx));
			return got;
		}
		if (got == 0)
			break;
		done += (size_t)got;
	}
	return (long long)done;
}

int tool_mds_verify(struct tool_mds *s, struct tool_map *m, char *err, size_t errlen)
{
	int rc;

	if (!s->mds_ctx) {
		rc = mount_one(s, 1, &s->mds_ctx, err, errlen);
		if (rc)
			return rc;
		rc = pnfs_open(s->mds_ctx, s->url.path, O_RDONLY, 0, &s->mds_fh);
		if (rc)
			return proto_errf(err, errlen, rc, "%s", pnfs_get_error(s->mds_ctx));
	}
	rc = tool_map_verify(m, mds_read, s, "the MDS path");
	if (rc < 0)
		proto_errf(err, errlen, rc, "--verify: %s", strerror(-rc));
	return rc;
}

void tool_mds_close(struct tool_mds *s)
{
	if (!s)
		return;
	unmount_one(s->mds_ctx, s->mds_fh);
	unmount_one(s->ctx, s->fh);
	free(s);
}
