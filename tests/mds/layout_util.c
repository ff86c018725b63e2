/* Layout helpers for the tests (see layout_util.h): one COMPOUND [SEQUENCE, PUTFH, op] per call,
 * results copied out so callers never hold decoded replies; device addresses resolved with blkmap
 * against the lab, as a real client finds the LUNs before its direct I/O. */
#include "tests/mds/layout_util.h"

#include "blkmap/blkmap_xdr.h"
#include "proto/layout.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static nfs_resop4 *last_res(struct proto_compound_res *r)
{
	return r->res.resarray.resarray_len ? &r->res.resarray.resarray_val[r->res.resarray.resarray_len - 1] : NULL;
}

/* Run [SEQUENCE, (PUTFH,) op]: 0 when the reply decoded (status in r->res.status), -errno. */
static int run_op(struct nc *c, const struct nc_fh *fh, const nfs_argop4 *op, struct proto_compound_res *r)
{
	nfs_argop4 ops[2];
	unsigned n = 0;

	if (fh)
		nc_op_putfh(&ops[n++], fh);
	ops[n++] = *op;
	memset(r, 0, sizeof(*r));
	return nc_seq(c, ops, n, r);
}

int lt_layoutget(struct nc *c, const struct nc_fh *fh, const struct lt_get *g, struct lt_layout *out)
{
	nfs_argop4 op;
	LAYOUTGET4args *a = &op.nfs_argop4_u.oplayoutget;
	struct proto_compound_res r;
	int rc;

	nc_op_simple(&op, OP_LAYOUTGET);
	a->loga_layout_type = g->type;
	a->loga_iomode = g->iomode;
	a->loga_offset = g->off;
	a->loga_length = g->len;
	a->loga_minlength = g->minlen;
	a->loga_stateid = *g->sid;
	a->loga_maxcount = g->maxcount;
	rc = run_op(c, fh, &op, &r);
	if (rc)
		return rc;
	rc = (int)r.res.status;
	if (rc == 0 && out) {
		LAYOUTGET4resok *ok = &last_res(&r)->nfs_resop4_u.oplayoutget.LAYOUTGET4res_u.logr_resok4;
		layout4 *l;
		memset(out, 0, sizeof(*out));
		out->sid = ok->logr_stateid;
		out->return_on_close = ok->logr_return_on_close;
		if (ok->logr_layout.logr_layout_len != 1) {
			rc = -EPROTO;
			goto done;
		}
		l = &ok->logr_layout.logr_layout_val[0];
		out->off = l->lo_offset;
		out->len = l->lo_length;
		out->iomode = l->lo_iomode;
		out->type = l->lo_content.loc_type;
		if (out->type == LAYOUT4_SCSI) {
			pnfs_scsi_layout4 sl;
			memset(&sl, 0, sizeof(sl));
			if (proto_scsi_layout_decode(&l->lo_content, &sl) != 0 || sl.sl_extents.sl_extents_len > LT_MAX_EXTENTS) {
				rc = -EPROTO;
				goto done;
			}
			out->n = sl.sl_extents.sl_extents_len;
			for (unsigned i = 0; i < out->n; i++) {
				pnfs_scsi_extent4 *e = &sl.sl_extents.sl_extents_val[i];
				memcpy(out->ext[i].bex_vol_id, e->se_vol_id, NFS4_DEVICEID4_SIZE);
				out->ext[i].bex_file_offset = e->se_file_offset;
				out->ext[i].bex_length = e->se_length;
				out->ext[i].bex_storage_offset = e->se_storage_offset;
				out->ext[i].bex_state = (pnfs_block_extent_state4)e->se_state;
			}
			proto_scsi_layout_free(&sl);
		} else {
			pnfs_block_layout4 bl;
			memset(&bl, 0, sizeof(bl));
			if (proto_block_layout_decode(&l->lo_content, &bl) != 0 ||
			    bl.blo_extents.blo_extents_len > LT_MAX_EXTENTS) {
				rc = -EPROTO;
				goto done;
			}
			out->n = bl.blo_extents.blo_extents_len;
			memcpy(out->ext, bl.blo_extents.blo_extents_val, out->n * sizeof(out->ext[0]));
			proto_block_layout_free(&bl);
		}
	}
done:
	proto_compound_res_free(&r);
	return rc;
}

int lt_layoutcommit(struct nc *c, const struct nc_fh *fh, const struct lt_commit *lc)
{
	const layouttype4 type = lc->type;
	const pnfs_block_extent4 *ext = lc->ext;
	const unsigned n = lc->n;
	nfs_argop4 op;
	LAYOUTCOMMIT4args *a = &op.nfs_argop4_u.oplayoutcommit;
	struct proto_compound_res r;
	layoutupdate4 body = { 0 };
	int rc;

	nc_op_simple(&op, OP_LAYOUTCOMMIT);
	a->loca_offset = lc->off;
	a->loca_length = lc->len;
	a->loca_reclaim = lc->reclaim ? TRUE : FALSE;
	a->loca_stateid = *lc->sid;
	if (lc->last_write >= 0) {
		a->loca_last_write_offset.no_newoffset = TRUE;
		a->loca_last_write_offset.newoffset4_u.no_offset = (uint64_t)lc->last_write;
	}
	a->loca_time_modify.nt_timechanged = FALSE;
	if (lc->body_empty) {
		body.lou_type = type;
	} else if (type == LAYOUT4_SCSI) {
		pnfs_scsi_layoutupdate4 su;
		pnfs_scsi_range4 *rg = calloc(n ? n : 1, sizeof(*rg));
		if (!rg)
			return -ENOMEM;
		for (unsigned i = 0; i < n; i++) {
			rg[i].sr_file_offset = ext[i].bex_file_offset;
			rg[i].sr_length = ext[i].bex_length;
		}
		su.slu_commit_list.slu_commit_list_len = n;
		su.slu_commit_list.slu_commit_list_val = rg;
		rc = proto_scsi_layoutupdate_encode(&su, &body);
		free(rg);
		if (rc)
			return rc;
	} else {
		pnfs_block_layoutupdate4 bu;
		bu.blu_commit_list.blu_commit_list_len = n;
		bu.blu_commit_list.blu_commit_list_val = (pnfs_block_extent4 *)ext;
		rc = proto_block_layoutupdate_encode(&bu, &body);
		if (rc)
			return rc;
	}
	a->loca_layoutupdate = body;
	rc = run_op(c, fh, &op, &r);
	if (!lc->body_empty)
		proto_layoutupdate_free(&body);
	if (rc)
		return rc;
	rc = (int)r.res.status;
	if (rc == 0 && lc->newsize) {
		LAYOUTCOMMIT4resok *ok = &last_res(&r)->nfs_resop4_u.oplayoutcommit.LAYOUTCOMMIT4res_u.locr_resok4;
		*lc->newsize = ok->locr_newsize.ns_sizechanged ? ok->locr_newsize.newsize4_u.ns_size : UINT64_MAX;
	}
	proto_compound_res_free(&r);
	return rc;
}

int lt_layoutreturn_file(struct nc *c, const struct nc_fh *fh, layouttype4 type, uint32_t iomode, uint64_t off,
			 uint64_t len, stateid4 *sid, int *present)
{
	nfs_argop4 op;
	LAYOUTRETURN4args *a = &op.nfs_argop4_u.oplayoutreturn;
	struct proto_compound_res r;
	int rc;

	nc_op_simple(&op, OP_LAYOUTRETURN);
	a->lora_layout_type = type;
	a->lora_iomode = iomode;
	a->lora_layoutreturn.lr_returntype = LAYOUTRETURN4_FILE;
	a->lora_layoutreturn.layoutreturn4_u.lr_layout.lrf_offset = off;
	a->lora_layoutreturn.layoutreturn4_u.lr_layout.lrf_length = len;
	a->lora_layoutreturn.layoutreturn4_u.lr_layout.lrf_stateid = *sid;
	rc = run_op(c, fh, &op, &r);
	if (rc)
		return rc;
	rc = (int)r.res.status;
	if (rc == 0) {
		layoutreturn_stateid *s = &last_res(&r)->nfs_resop4_u.oplayoutreturn.LAYOUTRETURN4res_u.lorr_stateid;
		if (present)
			*present = s->lrs_present;
		if (s->lrs_present)
			*sid = s->layoutreturn_stateid_u.lrs_stateid;
	}
	proto_compound_res_free(&r);
	return rc;
}

int lt_layoutreturn_bulk(struct nc *c, const struct nc_fh *fh, layouttype4 type, uint32_t iomode)
{
	nfs_argop4 op;
	LAYOUTRETURN4args *a = &op.nfs_argop4_u.oplayoutreturn;
	struct proto_compound_res r;
	int rc;

	nc_op_simple(&op, OP_LAYOUTRETURN);
	a->lora_layout_type = type;
	a->lora_iomode = iomode;
	a->lora_layoutreturn.lr_returntype = fh ? LAYOUTRETURN4_FSID : LAYOUTRETURN4_ALL;
	rc = run_op(c, fh, &op, &r);
	if (rc)
		return rc;
	rc = (int)r.res.status;
	proto_compound_res_free(&r);
	return rc;
}

int lt_getdeviceinfo(struct nc *c, const void *devid, layouttype4 type, uint32_t maxcount, uint32_t notify,
		     device_addr4 *out, uint32_t *notification, uint32_t *mincount)
{
	nfs_argop4 op;
	GETDEVICEINFO4args *a = &op.nfs_argop4_u.opgetdeviceinfo;
	struct proto_compound_res r;
	int rc;

	nc_op_simple(&op, OP_GETDEVICEINFO);
	memcpy(a->gdia_device_id, devid, NFS4_DEVICEID4_SIZE);
	a->gdia_layout_type = type;
	a->gdia_maxcount = maxcount;
	a->gdia_notify_types.bitmap4_len = 1;
	a->gdia_notify_types.bitmap4_val = &notify;
	rc = run_op(c, NULL, &op, &r);
	if (rc)
		return rc;
	rc = (int)r.res.status;
	if (rc == 0) {
		GETDEVICEINFO4resok *ok = &last_res(&r)->nfs_resop4_u.opgetdeviceinfo.GETDEVICEINFO4res_u.gdir_resok4;
		if (notification)
			*notification = ok->gdir_notification.bitmap4_len ? ok->gdir_notification.bitmap4_val[0] : 0;
		if (out) {
			/* Take the body over from the reply. */
			*out = ok->gdir_device_addr;
			memset(&ok->gdir_device_addr, 0, sizeof(ok->gdir_device_addr));
		}
	} else if (rc == NFS4ERR_TOOSMALL && mincount && last_res(&r)) {
		*mincount = last_res(&r)->nfs_resop4_u.opgetdeviceinfo.GETDEVICEINFO4res_u.gdir_mincount;
	}
	proto_compound_res_free(&r);
	return rc;
}

int lt_getdevicelist(struct nc *c, const struct nc_fh *fh, layouttype4 type, uint64_t cookie, const unsigned char *verf,
		     struct lt_devlist *out)
{
	nfs_argop4 op;
	GETDEVICELIST4args *a = &op.nfs_argop4_u.opgetdevicelist;
	struct proto_compound_res r;
	int rc;

	nc_op_simple(&op, OP_GETDEVICELIST);
	a->gdla_layout_type = type;
	a->gdla_maxdevices = 8;
	a->gdla_cookie = cookie;
	if (verf)
		memcpy(a->gdla_cookieverf, verf, NFS4_VERIFIER_SIZE);
	rc = run_op(c, fh, &op, &r);
	if (rc)
		return rc;
	rc = (int)r.res.status;
	if (rc == 0) {
		GETDEVICELIST4resok *ok = &last_res(&r)->nfs_resop4_u.opgetdevicelist.GETDEVICELIST4res_u.gdlr_resok4;
		memset(out, 0, sizeof(*out));
		out->n = ok->gdlr_deviceid_list.gdlr_deviceid_list_len;
		for (unsigned i = 0; i < out->n && i < 8; i++)
			memcpy(out->ids[i], ok->gdlr_deviceid_list.gdlr_deviceid_list_val[i], NFS4_DEVICEID4_SIZE);
		out->cookie = ok->gdlr_cookie;
		memcpy(out->verf, ok->gdlr_cookieverf, NFS4_VERIFIER_SIZE);
		out->eof = ok->gdlr_eof;
	}
	proto_compound_res_free(&r);
	return rc;
}

int lt_test_stateid(struct nc *c, const stateid4 *sid, nfsstat4 *code)
{
	nfs_argop4 op;
	struct proto_compound_res r;
	stateid4 s = *sid;
	int rc;

	nc_op_simple(&op, OP_TEST_STATEID);
	op.nfs_argop4_u.optest_stateid.ts_stateids.ts_stateids_len = 1;
	op.nfs_argop4_u.optest_stateid.ts_stateids.ts_stateids_val = &s;
	rc = run_op(c, NULL, &op, &r);
	if (rc)
		return rc;
	rc = (int)r.res.status;
	if (rc == 0) {
		TEST_STATEID4resok *ok = &last_res(&r)->nfs_resop4_u.optest_stateid.TEST_STATEID4res_u.tsr_resok4;
		*code = ok->tsr_status_codes.tsr_status_codes_len ? ok->tsr_status_codes.tsr_status_codes_val[0]
								    : NFS4ERR_SERVERFAULT;
	}
	proto_compound_res_free(&r);
	return rc;
}

struct blkmap_vol *lt_device_volume(struct nc *c, struct blkmap_ctx *ctx, const struct test_lab *lab,
				    const void *devid, layouttype4 type)
{
	device_addr4 da = { 0 };
	struct blkmap_vol *vol = NULL;
	struct blkmap_discover_opts o = { 0 };
	char portal[128], err[256];
	const char *portals[1] = { portal };
	int rc;

	rc = lt_getdeviceinfo(c, devid, type, 1 << 20, 0, &da, NULL, NULL);
	if (rc) {
		fprintf(stderr, "\n  GETDEVICEINFO: %d\n", rc);
		return NULL;
	}
	rc = blkmap_vol_from_device_addr(&da, &vol, err, sizeof(err));
	proto_device_addr_free(&da);
	if (rc) {
		fprintf(stderr, "\n  device address does not decode: %s\n", err);
		return NULL;
	}
	snprintf(portal, sizeof(portal), "iscsi://127.0.0.1:%d", lab->port);
	o.portals = portals;
	o.nportals = 1;
	rc = blkmap_resolve(ctx, vol, &o, NULL);
	if (rc) {
		fprintf(stderr, "\n  resolving the device: %s\n", blkmap_errstr(ctx));
		blkmap_vol_free(vol);
		return NULL;
	}
	return vol;
}

int lt_extent_pwrite(struct blkmap_vol *vol, const pnfs_block_extent4 *e, uint64_t foff, const void *buf, size_t len)
{
	if (foff < e->bex_file_offset || foff + len > e->bex_file_offset + e->bex_length)
		return -ERANGE;
	return blkmap_vol_pwrite(vol, buf, len, e->bex_storage_offset + (foff - e->bex_file_offset));
}

int lt_extent_pread(struct blkmap_vol *vol, const pnfs_block_extent4 *e, uint64_t foff, void *buf, size_t len)
{
	if (foff < e->bex_file_offset || foff + len > e->bex_file_offset + e->bex_length)
		return -ERANGE;
	return blkmap_vol_pread(vol, buf, len, e->bex_storage_offset + (foff - e->bex_file_offset));
}

/* Send req, read the whole answer (NUL-terminated, caller frees). NULL on failure. */
static char *http(int port, const char *req)
{
	struct sockaddr_in sa = { 0 };
	char *buf = NULL;
	size_t len = 0, cap = 0, rl = strlen(req);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0)
		return NULL;
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || send(fd, req, rl, 0) != (ssize_t)rl) {
		close(fd);
		return NULL;
	}
	for (;;) {
		ssize_t n;
		if (len + 4096 + 1 > cap) {
			char *p = realloc(buf, cap = cap * 2 + 8192);
			if (!p)
				break;
			buf = p;
		}
		n = recv(fd, buf + len, cap - len - 1, 0);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (buf)
		buf[len] = 0;
	return buf;
}

long long lt_metric(int port, const char *sample)
{
	char *buf = http(port, "GET /metrics HTTP/1.0\r\n\r\n"), *line;
	size_t slen = strlen(sample);
	long long v = -1;

	if (!buf)
		return -1;
	for (line = buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
		if (strncmp(line, sample, slen) == 0 && line[slen] == ' ') {
			v = strtoll(line + slen + 1, NULL, 10);
			break;
		}
	free(buf);
	return v;
}

int lt_http_status(int port, const char *req)
{
	char *buf = http(port, req);
	int code = -1;

	if (buf && strncmp(buf, "HTTP/1.", 7) == 0 && strlen(buf) > 12)
		code = atoi(buf + 9);
	free(buf);
	return code;
}

void lt_idle(struct nc *c, int ms)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct proto_compound_res r;
		long el;
		clock_gettime(CLOCK_MONOTONIC, &t);
		el = (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
		if (el >= ms)
			return;
		memset(&r, 0, sizeof(r));
		if (nc_seq(c, NULL, 0, &r) == 0)
			proto_compound_res_free(&r);
		nc_serve_callbacks(c, ms - el < 300 ? (int)(ms - el) : 300, 1000);
	}
}
