/* A raw libiscsi session to one lab LUN, for the checks and benchmarks that talk SCSI without blkmap
 * (the lab's own suite, bench-blkmap's baseline). Header-only: the test runner and the benchmark
 * programs are linked apart. */
#ifndef TESTS_LAB_ISCSI_H
#define TESTS_LAB_ISCSI_H

#include <iscsi/iscsi.h>
#include <stddef.h>

/* Log in to the LUN of urlstr (iscsi://[user%secret@]host[:port]/iqn/lun) as initiator, header digest
 * none or CRC32C: the session, its LUN number in *lun; NULL when the URL does not parse or the login
 * fails. Free with iscsi_logout_sync and iscsi_destroy_context. */
static inline struct iscsi_context *lab_iscsi_connect(const char *urlstr, const char *initiator, int *lun)
{
	struct iscsi_context *ctx = iscsi_create_context(initiator);
	struct iscsi_url *url;

	if (!ctx)
		return NULL;
	url = iscsi_parse_full_url(ctx, urlstr);
	if (!url) {
		iscsi_destroy_context(ctx);
		return NULL;
	}
	iscsi_set_targetname(ctx, url->target);
	iscsi_set_session_type(ctx, ISCSI_SESSION_NORMAL);
	iscsi_set_header_digest(ctx, ISCSI_HEADER_DIGEST_NONE_CRC32C);
	if (url->user[0])
		iscsi_set_initiator_username_pwd(ctx, url->user, url->passwd);
	*lun = url->lun;
	if (iscsi_full_connect_sync(ctx, url->portal, url->lun) != 0) {
		iscsi_destroy_url(url);
		iscsi_destroy_context(ctx);
		return NULL;
	}
	iscsi_destroy_url(url);
	return ctx;
}

#endif
