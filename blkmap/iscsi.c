/* iSCSI LUNs through libiscsi, one session per LUN, all in the context's epoll set. blkmap owns the
 * session life rather than libiscsi's auto-reconnect: a dropped or silent session is torn down, its
 * in-flight commands go back to the head of the queue, and a fresh login (same initiator name and
 * ISID, so the target sees the same initiator port) is retried with backoff; every command carries
 * its own deadline, so a LUN that never comes back fails each command within the command timeout. */
#include "blkmap/internal.h"
#include "proto/log.h"

#include <errno.h>
#include <inttypes.h>
#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#define BACKOFF_FIRST_MS 100
#define BACKOFF_MAX_MS 2000

static void after_service(struct blkmap_dev *dev, int rc);

static void set_state(struct blkmap_dev *dev, enum bm_dev_state st)
{
	int was = dev->state == BM_CONNECTING || dev->state == BM_RESTORING;
	int is = st == BM_CONNECTING || st == BM_RESTORING;

	if (was && !is)
		dev->ctx->connecting--;
	else if (!was && is)
		dev->ctx->connecting++;
	dev->state = st;
	bm_ident_keeper_update(dev);
	bm_timer_update(dev->ctx);
}

void bm_src_update(struct blkmap_dev *dev)
{
	struct epoll_event ev = { 0 };
	int fd, we;

	if (!dev->isc) {
		bm_src_remove(dev);
		return;
	}
	fd = iscsi_get_fd(dev->isc);
	we = iscsi_which_events(dev->isc);
	ev.events = EPOLLRDHUP;
	if (we & POLLIN)
		ev.events |= EPOLLIN;
	if (we & POLLOUT)
		ev.events |= EPOLLOUT;
	ev.data.ptr = &dev->src;
	if (fd != dev->reg_fd) {
		bm_src_remove(dev);
		if (fd < 0)
			return;
		if (epoll_ctl(dev->ctx->epfd, EPOLL_CTL_ADD, fd, &ev) == 0) {
			dev->reg_fd = fd;
			dev->reg_events = ev.events;
		}
		return;
	}
	if (ev.events == dev->reg_events)
		return;
	if (epoll_ctl(dev->ctx->epfd, EPOLL_CTL_MOD, fd, &ev) != 0 && errno == ENOENT)
		epoll_ctl(dev->ctx->epfd, EPOLL_CTL_ADD, fd, &ev);
	dev->reg_events = ev.events;
}

/* ---- sessions --------------------------------------------------------------------------------- */

/* Connecting: the TCP connection, the login, then TEST UNIT READY until the unit attentions every
 * fresh login brings are cleared (at most 10). These are the steps libiscsi's full connect takes, done
 * here because libiscsi frees its own connect state only through callbacks it does not make once the
 * context is destroyed before the login completes: every timed-out login would leak it. Ours is the
 * device, so nothing is left behind. */
static void connect_failed_why(struct blkmap_dev *dev, const char *what)
{
	dev->connect_result = -1;
	snprintf(dev->down_reason, sizeof(dev->down_reason), "%s: %s", what, iscsi_get_error(dev->isc));
}

static void login_tur_cb(struct iscsi_context *isc, int status, void *data, void *priv)
{
	struct blkmap_dev *dev = priv;
	struct scsi_task *task = data;
	int key = task ? task->sense.key : 0, ascq = task ? task->sense.ascq : 0;

	if (task)
		scsi_free_scsi_task(task);
	if (dev->cancelling || status == SCSI_STATUS_CANCELLED)
		return; /* the session is being torn down */
	if (status == SCSI_STATUS_CHECK_CONDITION && key == SCSI_SENSE_UNIT_ATTENTION && ++dev->login_uas <= 10) {
		if (!iscsi_testunitready_task(isc, dev->lun, login_tur_cb, dev))
			connect_failed_why(dev, "TEST UNIT READY after login");
		return;
	}
	if (status == SCSI_STATUS_CHECK_CONDITION && key == SCSI_SENSE_UNIT_ATTENTION) {
		dev->connect_result = -1;
		snprintf(dev->down_reason, sizeof(dev->down_reason), "more than 10 unit attentions after login");
		return;
	}
	/* A LUN reserved by another initiator, without a medium or being sanitized still has a session
	 * (its commands say so themselves); any other failure fails the login, as with libiscsi's. */
	if (status == SCSI_STATUS_GOOD || status == SCSI_STATUS_RESERVATION_CONFLICT ||
	    (status == SCSI_STATUS_CHECK_CONDITION && key == SCSI_SENSE_NOT_READY &&
	     (ascq == SCSI_SENSE_ASCQ_MEDIUM_NOT_PRESENT || ascq == SCSI_SENSE_ASCQ_MEDIUM_NOT_PRESENT_TRAY_CLOSED ||
	      ascq == SCSI_SENSE_ASCQ_MEDIUM_NOT_PRESENT_TRAY_OPEN || ascq == SCSI_SENSE_ASCQ_SANITIZE_IN_PROGRESS))) {
		dev->connect_result = 1;
		return;
	}
	connect_failed_why(dev, "TEST UNIT READY after login failed");
}

/* The TCP connection is up (then log in), or the login is done (then clear the unit attentions). */
static void connect_step_cb(struct iscsi_context *isc, int status, void *data, void *priv)
{
	struct blkmap_dev *dev = priv;
	(void)data;
	if (dev->cancelling)
		return;
	if (status != SCSI_STATUS_GOOD) {
		connect_failed_why(dev, "login failed");
		return;
	}
	if (!iscsi_is_logged_in(isc)) {
		if (iscsi_login_async(isc, connect_step_cb, dev) != 0)
			connect_failed_why(dev, "login failed");
		return;
	}
	dev->login_uas = 0;
	if (!iscsi_testunitready_task(isc, dev->lun, login_tur_cb, dev))
		connect_failed_why(dev, "TEST UNIT READY after login");
}

static struct iscsi_context *new_session(struct blkmap_dev *dev)
{
	struct iscsi_context *isc = iscsi_create_context(dev->ctx->initiator);

	if (!isc)
		return NULL;
	iscsi_set_targetname(isc, dev->target);
	iscsi_set_session_type(isc, ISCSI_SESSION_NORMAL);
	iscsi_set_header_digest(isc, ISCSI_HEADER_DIGEST_NONE_CRC32C);
	if (dev->user[0])
		iscsi_set_initiator_username_pwd(isc, dev->user, dev->passwd);
	/* the same ISID on every login: persistent reservations belong to the initiator port */
	iscsi_set_isid_random(isc, dev->isid_rnd, dev->isid_qual);
	iscsi_set_noautoreconnect(isc, 1);
	iscsi_set_timeout(isc, 0);
	iscsi_set_tcp_user_timeout(isc, (int)dev->ctx->timeout_ms);
	return isc;
}

static void teardown(struct blkmap_dev *dev)
{
	if (!dev->isc)
		return;
	bm_src_remove(dev);
	/* libiscsi cancels what it still holds; our callbacks ignore that and the queue walk below
	 * (in the callers) decides each command's fate */
	dev->cancelling = 1;
	iscsi_destroy_context(dev->isc);
	dev->cancelling = 0;
	dev->isc = NULL;
}

static void connect_failed(struct blkmap_dev *dev);

static void start_connect(struct blkmap_dev *dev)
{
	struct iscsi_context *isc = new_session(dev);
	struct bm_sigpipe g;
	int rc;

	dev->connect_result = 0;
	if (!isc) {
		snprintf(dev->down_reason, sizeof(dev->down_reason), "cannot create an iSCSI context");
		connect_failed(dev);
		return;
	}
	dev->isc = isc;
	set_state(dev, BM_CONNECTING);
	dev->connect_deadline_ms = bm_now_ms() + dev->ctx->timeout_ms;
	bm_sigpipe_block(&g);
	rc = iscsi_connect_async(isc, dev->portal, connect_step_cb, dev);
	bm_sigpipe_restore(&g);
	if (rc != 0) {
		snprintf(dev->down_reason, sizeof(dev->down_reason), "connect to %s failed: %s", dev->portal,
			 iscsi_get_error(isc));
		connect_failed(dev);
		return;
	}
	bm_src_update(dev);
}

/* Move the in-flight commands back to the head of the queue (their order kept) or fail those whose
 * deadline has passed. */
static void requeue_inflight(struct blkmap_dev *dev, int64_t now, const char *why)
{
	struct bm_cmd *list = dev->infl_head, *expired = NULL, **etail = &expired;
	struct bm_cmd *keep_head = NULL, *keep_tail = NULL;

	dev->infl_head = dev->infl_tail = NULL;
	dev->inflight = 0;
	while (list) {
		struct bm_cmd *c = list;
		list = c->next;
		c->next = c->prev = NULL;
		c->on_list = 0;
		if (c->task) {
			scsi_free_scsi_task(c->task);
			c->task = NULL;
		}
		if (!c->req && c == dev->restore_cmd) {
			dev->restore_cmd = NULL;
			bm_cmd_free(c);
			continue;
		}
		if (c->timing_out || now >= c->deadline_ms) {
			*etail = c;
			etail = &c->next;
			continue;
		}
		c->prev = keep_tail;
		if (keep_tail)
			keep_tail->next = c;
		else
			keep_head = c;
		keep_tail = c;
		c->on_list = 1;
	}
	if (keep_head) {
		keep_tail->next = dev->pend_head;
		if (dev->pend_head)
			dev->pend_head->prev = keep_tail;
		else
			dev->pend_tail = keep_tail;
		dev->pend_head = keep_head;
		for (struct bm_cmd *c = keep_head; c != keep_tail->next; c = c->next)
			dev->npending++;
	}
	while (expired) {
		struct bm_cmd *c = expired;
		char what[80];
		expired = c->next;
		c->next = NULL;
		bm_cmd_finish(c, -ETIMEDOUT, "%s: %s: no response within %u ms (%s)", dev->name,
			      bm_cmd_what(c, what, sizeof(what)), dev->ctx->timeout_ms, why);
	}
}

static void session_lost(struct blkmap_dev *dev, const char *why)
{
	char reason[300];
	int64_t now = bm_now_ms();

	snprintf(reason, sizeof(reason), "%s", why);
	dev->unchecked = dev->kind == BLKMAP_DEV_ISCSI;
	teardown(dev);
	snprintf(dev->down_reason, sizeof(dev->down_reason), "%s", reason);
	set_state(dev, BM_DOWN);
	dev->next_attempt_ms = now;
	dev->backoff_ms = BACKOFF_FIRST_MS;
	dev->lost = 0;
	requeue_inflight(dev, now, reason);
	if (dev->refs > 0)
		bm_iscsi_kick(dev);
}

static void connect_failed(struct blkmap_dev *dev)
{
	int64_t now = bm_now_ms();

	teardown(dev);
	if (dev->opening) {
		set_state(dev, BM_FAILED);
		return;
	}
	set_state(dev, BM_DOWN);
	dev->next_attempt_ms = now + dev->backoff_ms;
	dev->backoff_ms = dev->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : dev->backoff_ms * 2;
}

static void restore_done(struct bm_cmd *cmd);

static int send_internal(struct blkmap_dev *dev, struct bm_cmd *c, void (*complete)(struct bm_cmd *cmd))
{
	dev->restore_cmd = c;
	c->complete = complete;
	if (bm_iscsi_send(c) < 0) {
		dev->restore_cmd = NULL;
		bm_cmd_free(c);
		return -1;
	}
	return 0;
}

static void go_up(struct blkmap_dev *dev)
{
	set_state(dev, BM_UP);
	dev->backoff_ms = BACKOFF_FIRST_MS;
	bm_dev_dispatch(dev);
}

/* After a login with a key registered earlier: READ KEYS, then REGISTER AND IGNORE EXISTING KEY only
 * if the key is still listed (it is gone when this initiator was preempted: it stays fenced). */
static void restore_done(struct bm_cmd *cmd)
{
	struct blkmap_dev *dev = cmd->dev;
	struct blkmap_pr_keys keys;
	int present = 0;

	if (dev->restore_cmd == cmd)
		dev->restore_cmd = NULL;
	if (cmd->status < 0 || dev->state != BM_RESTORING) {
		bm_cmd_free(cmd);
		if (dev->state == BM_RESTORING)
			go_up(dev);
		return;
	}
	if (dev->restore_step == 0) {
		if (bm_parse_read_keys(cmd->dbuf, cmd->dgot, &keys) == 0) {
			for (unsigned i = 0; i < keys.nkeys; i++)
				if (keys.keys[i] == dev->pr_key)
					present = 1;
		}
		bm_cmd_free(cmd);
		if (!present) {
			/* fenced while away: nothing to restore */
			dev->pr_key = 0;
			go_up(dev);
			return;
		}
		dev->restore_step = 1;
		{
			struct bm_cmd *c = bm_cmd_new(NULL, dev, BM_OP_CDB);
			struct blkmap_pr_out a = { .action = BLKMAP_PR_REGISTER_AND_IGNORE, .sa_key = dev->pr_key };
			uint8_t param[24];
			if (!c || !(c->dbuf = malloc(24))) {
				bm_cmd_free(c);
				go_up(dev);
				return;
			}
			bm_cdb_prout(c, &a, param);
			memcpy(c->dbuf, param, 24);
			c->dlen = 24;
			c->dir = 2;
			if (send_internal(dev, c, restore_done) < 0)
				go_up(dev);
		}
		return;
	}
	bm_cmd_free(cmd);
	go_up(dev);
}

static void restore_start(struct blkmap_dev *dev)
{
	struct bm_cmd *c;

	if (!dev->pr_key) {
		go_up(dev);
		return;
	}
	dev->restore_step = 0;
	c = bm_cmd_new(NULL, dev, BM_OP_CDB);
	if (!c || !(c->dbuf = calloc(1, 8 + 8 * BLKMAP_PR_MAX_KEYS))) {
		bm_cmd_free(c);
		go_up(dev);
		return;
	}
	bm_cdb_prin(c, 0, 8 + 8 * BLKMAP_PR_MAX_KEYS);
	c->dlen = 8 + 8 * BLKMAP_PR_MAX_KEYS;
	c->dir = 1;
	if (send_internal(dev, c, restore_done) < 0)
		go_up(dev);
	else
		bm_src_update(dev);
}

/* The queued commands of a device out of service fail at once: it is not the LUN they were meant for.
 * A completion may drop the caller's last reference: ours keeps the device until the walk is over. */
static void fail_wrong(struct blkmap_dev *dev)
{
	if (!dev->pend_head)
		return;
	blkmap_dev_ref(dev);
	while (dev->pend_head && dev->wrong) {
		struct bm_cmd *c = bm_pend_pop(dev);
		char what[80];
		bm_cmd_finish(c, -BLKMAP_EWRONGLUN, "%s: %s: out of service, the LUN came back different: %s", dev->name,
			      bm_cmd_what(c, what, sizeof(what)), dev->wrong_why);
	}
	blkmap_dev_close(dev);
}

/* ---- the identity check after a reconnect ----------------------------------------------------- */

/* Steps: VPD page 0x83 (when the LUN had one at open), READ CAPACITY(16), then each identity region;
 * one internal command at a time, before any queued command is sent. */
enum { VERIFY_83 = 0, VERIFY_CAP = 1, VERIFY_REGIONS = 2 };

static void verify_done(struct bm_cmd *cmd);

static void identity_failed(struct blkmap_dev *dev, const char *why)
{
	bm_ident_wrong(dev, why);
	teardown(dev);
	set_state(dev, BM_DOWN);
	dev->next_attempt_ms = bm_now_ms() + BM_IDENT_RETRY_MS;
	fail_wrong(dev);
}

/* Checks end inside libiscsi's callbacks, where the session cannot be torn down: the outcome waits
 * in the device until after_service() acts on it. */
static void verify_fail(struct blkmap_dev *dev, const char *why)
{
	dev->verify_failed = 1;
	snprintf(dev->verify_why, sizeof(dev->verify_why), "%s", why);
}

/* Send the step's command: 0, or -1 with dev->lost (the session cannot take it) or dev->verify_failed
 * set. */
static int verify_send(struct blkmap_dev *dev)
{
	struct bm_cmd *c = bm_cmd_new(NULL, dev, BM_OP_CDB);
	uint32_t alloc = 32, blocks;
	uint64_t lba;

	if (!c) {
		verify_fail(dev, "cannot check it: out of memory");
		return -1;
	}
	if (dev->verify_step == VERIFY_83) {
		alloc = 4096;
		bm_cdb_inquiry(c, 1, 0x83, (uint16_t)alloc);
	} else if (dev->verify_step == VERIFY_CAP) {
		bm_cdb_readcap16(c);
	} else {
		bm_ident_region_blocks(dev, dev->verify_step - VERIFY_REGIONS, &lba, &blocks);
		alloc = blocks * dev->block_bytes;
		bm_cdb_read16(c, lba, blocks);
	}
	c->dbuf = calloc(1, alloc);
	if (!c->dbuf) {
		bm_cmd_free(c);
		verify_fail(dev, "cannot check it: out of memory");
		return -1;
	}
	c->dlen = alloc;
	c->dir = 1;
	if (send_internal(dev, c, verify_done) < 0)
		return -1;
	bm_src_update(dev);
	return 0;
}

/* What the step's answer says: 0 (the same LUN so far) or -BLKMAP_EWRONGLUN with why. */
static int verify_answer(struct blkmap_dev *dev, struct bm_cmd *cmd, char *why, size_t len)
{
	uint64_t blocks;
	uint32_t block_bytes;

	if (cmd->status < 0) {
		/* reserved to others: nothing can be read through this session, right LUN or not */
		if (dev->verify_step >= VERIFY_REGIONS && cmd->status == -BLKMAP_ERESERVATION)
			return 0;
		snprintf(why, len, "cannot check it: %s", cmd->msg);
		return -BLKMAP_EWRONGLUN;
	}
	if (dev->verify_step == VERIFY_83) {
		struct blkmap_inquiry *now = calloc(1, sizeof(*now));
		int rc;
		if (!now) {
			snprintf(why, len, "cannot check it: out of memory");
			return -BLKMAP_EWRONGLUN;
		}
		if (bm_parse_vpd83(cmd->dbuf, cmd->dgot, now) < 0) {
			snprintf(why, len, "its VPD page 0x83 cannot be parsed");
			rc = -BLKMAP_EWRONGLUN;
		} else {
			rc = bm_ident_check_desig(dev, now, why, len);
		}
		free(now);
		return rc;
	}
	if (dev->verify_step == VERIFY_CAP) {
		if (bm_parse_readcap16(cmd->dbuf, cmd->dgot, &blocks, &block_bytes) < 0) {
			snprintf(why, len, "cannot check it: a short READ CAPACITY(16) answer");
			return -BLKMAP_EWRONGLUN;
		}
		return bm_ident_check_capacity(dev, blocks * block_bytes, block_bytes, why, len);
	}
	return bm_ident_check_region(dev, dev->verify_step - VERIFY_REGIONS, cmd->dbuf, cmd->dgot, why, len);
}

static void verify_done(struct bm_cmd *cmd)
{
	struct blkmap_dev *dev = cmd->dev;
	char why[300];
	int rc;

	if (dev->restore_cmd == cmd)
		dev->restore_cmd = NULL;
	if (dev->state != BM_RESTORING) {
		bm_cmd_free(cmd);
		return;
	}
	why[0] = '\0';
	rc = verify_answer(dev, cmd, why, sizeof(why));
	bm_cmd_free(cmd);
	if (rc) {
		verify_fail(dev, why);
		return;
	}
	if (++dev->verify_step < VERIFY_REGIONS + dev->nregions) {
		(void)verify_send(dev); /* a failure is acted on by after_service() */
		return;
	}
	bm_ident_passed(dev);
	restore_start(dev);
}

static void connected(struct blkmap_dev *dev)
{
	dev->logins++;
	if (dev->opening) {
		go_up(dev);
		return;
	}
	set_state(dev, BM_RESTORING);
	dev->verify_failed = 0;
	dev->verify_step = dev->have_inq && dev->inq.ndesig ? VERIFY_83 : VERIFY_CAP;
	if (verify_send(dev) == 0)
		return;
	if (dev->verify_failed) {
		dev->verify_failed = 0;
		identity_failed(dev, dev->verify_why);
		return;
	}
	snprintf(dev->down_reason, sizeof(dev->down_reason), "cannot send the identity check: %s",
		 dev->isc ? iscsi_get_error(dev->isc) : "no session");
	connect_failed(dev);
}

static void after_service(struct blkmap_dev *dev, int rc)
{
	if (dev->state == BM_CONNECTING) {
		if (dev->connect_result == 1) {
			connected(dev);
		} else if (dev->connect_result == -1 || rc < 0) {
			if (dev->connect_result != -1 && dev->isc)
				snprintf(dev->down_reason, sizeof(dev->down_reason), "connect to %s failed: %s",
					 dev->portal, iscsi_get_error(dev->isc));
			connect_failed(dev);
		} else {
			bm_src_update(dev);
		}
		return;
	}
	if (dev->state == BM_RESTORING && dev->verify_failed) {
		dev->verify_failed = 0;
		identity_failed(dev, dev->verify_why);
		return;
	}
	if (dev->state == BM_UP || dev->state == BM_RESTORING) {
		if (dev->lost || rc < 0) {
			char why[300];
			snprintf(why, sizeof(why), "session lost: %s", dev->isc ? iscsi_get_error(dev->isc) : "?");
			session_lost(dev, why);
			return;
		}
		if (dev->state == BM_UP)
			bm_dev_dispatch(dev);
		else
			bm_src_update(dev);
	}
}

void bm_iscsi_service(struct blkmap_dev *dev, uint32_t events)
{
	struct bm_sigpipe g;
	int rc = 0;
	int pev = 0;

	if (!dev->isc)
		return;
	if (events & EPOLLIN)
		pev |= POLLIN;
	if (events & EPOLLOUT)
		pev |= POLLOUT;
	if (events & EPOLLERR)
		pev |= POLLERR;
	if (events & EPOLLHUP)
		pev |= POLLHUP;
	if ((events & EPOLLRDHUP) && !(pev & POLLIN))
		pev |= POLLIN; /* let libiscsi read what is left, then see EOF */
	/* the commands its completions queue (after_service, callbacks) are sent under the same guard */
	bm_sigpipe_block(&g);
	dev->in_isc_service++;
	rc = iscsi_service(dev->isc, pev);
	dev->in_isc_service--;
	if (dev->zombie) {
		dev->zombie = 0;
		bm_dev_destroy(dev);
		goto out;
	}
	if ((events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) && dev->isc) {
		if (dev->state != BM_CONNECTING)
			dev->lost = 1;
		else if (dev->connect_result == 0 && (events & (EPOLLHUP | EPOLLERR)))
			rc = -1; /* refused or reset before libiscsi said so */
	}
	if (dev->refs > 0)
		after_service(dev, rc);
out:
	bm_sigpipe_restore(&g);
}

void bm_iscsi_flush(struct blkmap_dev *dev)
{
	if (dev->isc && dev->state == BM_UP && !dev->lost && (iscsi_which_events(dev->isc) & POLLOUT)) {
		bm_iscsi_service(dev, EPOLLOUT);
		if (dev->refs == 0)
			return;
	}
	bm_src_update(dev);
}

void bm_iscsi_kick(struct blkmap_dev *dev)
{
	if (dev->wrong && dev->state != BM_UP)
		fail_wrong(dev);
	if (dev->state == BM_DOWN && (dev->pend_head || dev->keep_session || dev->wrong) &&
	    bm_now_ms() >= dev->next_attempt_ms)
		start_connect(dev);
}

void bm_iscsi_tick(struct blkmap_dev *dev, int64_t now)
{
	if (dev->state == BM_CONNECTING && now >= dev->connect_deadline_ms) {
		snprintf(dev->down_reason, sizeof(dev->down_reason), "login to %s did not complete within %u ms",
			 dev->portal, dev->ctx->timeout_ms);
		connect_failed(dev);
	}
	if (dev->state == BM_UP || dev->state == BM_RESTORING) {
		for (struct bm_cmd *c = dev->infl_head; c; c = c->next) {
			if (c->deadline_ms && now >= c->deadline_ms) {
				c->timing_out = 1;
				session_lost(dev, "command timed out");
				break;
			}
		}
	}
	if (dev->state != BM_UP) {
		/* commands waiting for a session: each gets the command timeout from now on */
		struct bm_cmd *c = dev->pend_head;
		while (c) {
			struct bm_cmd *next = c->next;
			if (!c->deadline_ms)
				c->deadline_ms = now + dev->ctx->timeout_ms;
			if (now >= c->deadline_ms) {
				char what[80];
				bm_pend_remove(dev, c);
				bm_cmd_finish(c, -ETIMEDOUT, "%s: %s: no session within %u ms (%s)", dev->name,
					      bm_cmd_what(c, what, sizeof(what)), dev->ctx->timeout_ms,
					      dev->down_reason[0] ? dev->down_reason : "not connected");
				if (dev->refs == 0)
					return;
			}
			c = next;
		}
		bm_iscsi_kick(dev);
	}
}

/* ---- commands --------------------------------------------------------------------------------- */

static void inflight_remove(struct blkmap_dev *dev, struct bm_cmd *c)
{
	bm_cmd_unlink(&dev->infl_head, &dev->infl_tail, c);
	dev->inflight--;
}

static void task_cb(struct iscsi_context *isc, int status, void *data, void *priv)
{
	struct bm_cmd *c = priv;
	struct blkmap_dev *dev = c->dev;
	struct scsi_task *task = c->task;
	char why[200];
	int rc, retry;

	(void)data;
	if (dev->cancelling)
		return; /* teardown in progress: the queue walk owns the command */
	if (status == SCSI_STATUS_CANCELLED || status == SCSI_STATUS_ERROR || status == SCSI_STATUS_TIMEOUT) {
		/* the session broke under this command: it stays in flight until the teardown requeues it */
		if (status == SCSI_STATUS_ERROR)
			snprintf(dev->down_reason, sizeof(dev->down_reason), "%s", iscsi_get_error(isc));
		dev->lost = 1;
		return;
	}
	inflight_remove(dev, c);
	c->task = NULL;
	rc = bm_scsi_status(status, task->sense.key, task->sense.ascq, why, sizeof(why), &retry);
	if (rc == 0 && c->op == BM_OP_CDB && c->dir == 1) {
		uint32_t n = task->datain.size > 0 ? (uint32_t)task->datain.size : 0;
		if (n > c->dlen)
			n = c->dlen;
		if (n)
			memcpy(c->dbuf, task->datain.data, n);
		c->dgot = n;
	}
	if (rc == 0 && (c->op == BM_OP_READ || c->op == BM_OP_WRITE) &&
	    task->residual_status != SCSI_RESIDUAL_NO_RESIDUAL && task->residual > 0) {
		rc = -EIO;
		snprintf(why, sizeof(why), "short transfer (residual %zu bytes)", task->residual);
	}
	if (rc == -EINVAL && c->op == BM_OP_CDB && c->cdb[0] == 0x5f &&
	    (c->cdb[1] & 0x1f) == BLKMAP_PR_PREEMPT_AND_ABORT && task->sense.ascq == SCSI_SENSE_ASCQ_INVALID_FIELD_IN_CDB) {
		/* tgt does not implement PREEMPT AND ABORT; PREEMPT removes the victim's registration all the
		 * same (its later commands are refused), it only leaves queued commands to run */
		if (!dev->no_preempt_abort)
			LOG_WARN("%s: the target has no PREEMPT AND ABORT; using PREEMPT (commands already queued at "
				 "the target are not aborted)",
				 dev->name);
		dev->no_preempt_abort = 1;
		c->cdb[1] = (uint8_t)((c->cdb[1] & 0xe0) | BLKMAP_PR_PREEMPT);
		retry = 1;
	}
	if (rc == -EINVAL && c->op == BM_OP_FLUSH && task->sense.ascq == SCSI_SENSE_ASCQ_INVALID_OPERATION_CODE) {
		/* SBC: a device without a volatile write cache need not implement SYNCHRONIZE CACHE; what it
		 * acknowledged is on stable media already */
		if (!dev->no_sync_cache)
			LOG_INFO("%s: the target has no SYNCHRONIZE CACHE(10): treated as having no volatile write "
				 "cache",
				 dev->name);
		dev->no_sync_cache = 1;
		rc = 0;
	}
	scsi_free_scsi_task(task);
	if (retry && c->retries < BM_MAX_RETRIES && bm_now_ms() < c->deadline_ms) {
		/* UNIT ATTENTION (reset, reservations preempted or released), BUSY: send it again */
		c->retries++;
		if (c->req)
			bm_pend_push_front(dev, c);
		else if (bm_iscsi_send(c) < 0) /* internal commands bypass the queue */
			bm_cmd_finish(c, -EIO, "%s: resend failed", dev->name);
		return;
	}
	if (rc < 0) {
		char what[80];
		bm_cmd_finish(c, rc, "%s: %s: %s", dev->name, bm_cmd_what(c, what, sizeof(what)), why);
	} else
		bm_cmd_finish(c, 0, NULL);
}

int bm_iscsi_send(struct bm_cmd *c)
{
	struct blkmap_dev *dev = c->dev;
	struct scsi_task *task = NULL;
	struct bm_sigpipe g;

	if (!c->deadline_ms)
		c->deadline_ms = bm_now_ms() + dev->ctx->timeout_ms;
	/* libiscsi 1.20.3 and later write a PDU at once when the socket is idle */
	bm_sigpipe_block(&g);
	switch (c->op) {
	case BM_OP_READ:
		task = iscsi_read16_iov_task(dev->isc, dev->lun, c->lba, (uint32_t)c->bytes, (int)dev->block_bytes, 0,
					     0, 0, 0, 0, task_cb, c, c->iov, c->niov);
		break;
	case BM_OP_WRITE:
		task = iscsi_write16_iov_task(dev->isc, dev->lun, c->lba, NULL, (uint32_t)c->bytes,
					      (int)dev->block_bytes, 0, 0, 0, 0, 0, task_cb, c, c->iov, c->niov);
		break;
	case BM_OP_CDB: {
		struct iscsi_data d = { c->dlen, c->dbuf };
		task = scsi_create_task(c->cdb_len, c->cdb,
					c->dir == 1 ? SCSI_XFER_READ : c->dir == 2 ? SCSI_XFER_WRITE : SCSI_XFER_NONE,
					(int)c->dlen);
		if (task && iscsi_scsi_command_async(dev->isc, dev->lun, task, task_cb, c->dir == 2 ? &d : NULL,
						     c) != 0) {
			scsi_free_scsi_task(task);
			task = NULL;
		}
		break;
	}
	case BM_OP_FLUSH:
		/* LBA 0, 0 blocks: the whole LUN; IMMED 0: status only once the cache is written */
		task = iscsi_synchronizecache10_task(dev->isc, dev->lun, 0, 0, 0, 0, task_cb, c);
		break;
	case BM_OP_PROUT:
		break;
	}
	bm_sigpipe_restore(&g);
	if (!task) {
		/* the session cannot take commands: back to the head of the queue, session reset */
		snprintf(dev->down_reason, sizeof(dev->down_reason), "cannot queue a command: %s",
			 iscsi_get_error(dev->isc));
		if (c->req)
			bm_pend_push_front(dev, c);
		dev->lost = 1;
		return -1;
	}
	c->task = task;
	bm_cmd_link(&dev->infl_head, &dev->infl_tail, c, 0);
	c->on_list = 2;
	dev->inflight++;
	return 0;
}

/* ---- open / close ----------------------------------------------------------------------------- */

/* Opening a LUN: the login, then the standard INQUIRY, the list of VPD pages, those of 0x80, 0x83 and
 * 0xb0 the LUN has, and READ CAPACITY(16), one command after another. Every LUN being opened runs
 * through these steps at the same time, each at its own pace: opening a volume's LUNs takes about
 * as many round trips as opening one of them, not that many times their number. */
enum probe_step { P_LOGIN, P_STD, P_PAGES, P_80, P_83, P_B0, P_CAP, P_DONE };

struct probe {
	struct blkmap_dev *dev;
	enum probe_step step;
	int busy;          /* the step's command is out */
	int status;        /* and what it ended with */
	uint32_t got;      /* bytes of its answer in buf */
	uint8_t buf[4096];
	char cmd_err[300]; /* why it failed */
	int has_80, has_83, has_b0;
	uint32_t max_blocks;
	int rc;
	char err[600];
};

static void probe_fail(struct probe *p, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void probe_fail(struct probe *p, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p->err, sizeof(p->err), fmt, ap);
	va_end(ap);
	p->rc = rc;
	p->step = P_DONE;
}

/* The command's request outlives nothing: once the opening is over, dev->probe is NULL and a late
 * completion (a device closed with the command still queued) finds no probe to write to. */
static int probe_finish(struct bm_req *req, struct bm_cmd *cmd)
{
	struct probe *p = ((struct blkmap_dev *)req->out)->probe;

	if (p) {
		p->got = cmd->dgot < sizeof(p->buf) ? cmd->dgot : (uint32_t)sizeof(p->buf);
		memcpy(p->buf, cmd->dbuf, p->got);
	}
	return 0;
}

static void probe_cb(struct blkmap_ctx *ctx, int status, void *priv)
{
	struct probe *p = ((struct blkmap_dev *)priv)->probe;

	if (!p)
		return;
	p->status = status;
	if (status < 0)
		snprintf(p->cmd_err, sizeof(p->cmd_err), "%s", blkmap_errstr(ctx));
	p->busy = 0;
}

/* Send the step's data-in command: READ CAPACITY(16) for P_CAP, else INQUIRY (evpd, page). */
static void probe_send(struct probe *p, int evpd, int page, uint16_t alloc)
{
	struct blkmap_dev *dev = p->dev;
	struct bm_req *req = bm_req_new(dev->ctx);
	struct bm_cmd *c;

	p->got = 0;
	if (!req) {
		p->status = -ENOMEM;
		snprintf(p->cmd_err, sizeof(p->cmd_err), "out of memory");
		return;
	}
	req->cmd_cb = probe_cb;
	req->priv = dev;
	req->out = dev;
	req->finish = probe_finish;
	p->busy = 1;
	c = bm_cmd_new(req, dev, BM_OP_CDB);
	if (!c || !(c->dbuf = calloc(1, alloc))) {
		if (c)
			bm_cmd_finish(c, -ENOMEM, "%s: out of memory", dev->name);
		else
			bm_req_fail_early(req, -ENOMEM, "%s: out of memory", dev->name);
	} else {
		if (p->step == P_CAP)
			bm_cdb_readcap16(c);
		else
			bm_cdb_inquiry(c, evpd, page, alloc);
		c->dlen = alloc;
		c->dir = 1;
		bm_dev_enqueue(dev, c);
		bm_dev_dispatch(dev);
	}
	bm_req_submit_done(req);
}

/* Take the answer to the step just done and start the next one (nothing while a command is out or
 * the login is under way). */
static void probe_advance(struct probe *p)
{
	struct blkmap_dev *dev = p->dev;

	if (p->step == P_DONE || p->busy)
		return;
	switch (p->step) {
	case P_LOGIN:
		if (dev->state == BM_CONNECTING || dev->state == BM_RESTORING)
			return;
		dev->opening = 0;
		if (dev->state != BM_UP) {
			probe_fail(p, -ECONNREFUSED, "%s: %s", dev->name,
				   dev->down_reason[0] ? dev->down_reason : "login failed");
			return;
		}
		p->step = P_STD;
		probe_send(p, 0, 0, 96);
		return;
	case P_STD:
		if (p->status < 0 || bm_parse_std_inquiry(p->buf, p->got, &dev->inq) < 0) {
			probe_fail(p, p->status < 0 ? p->status : -EPROTO, "%s: INQUIRY failed: %s", dev->name,
				   p->status < 0 ? p->cmd_err : "short response");
			return;
		}
		dev->have_inq = 1;
		if (dev->inq.device_type != 0) {
			probe_fail(p, -ENOTBLK, "%s: peripheral device type 0x%02x is not a direct-access block device",
				   dev->name, dev->inq.device_type);
			return;
		}
		p->step = P_PAGES;
		probe_send(p, 1, 0x00, 255);
		return;
	case P_PAGES:
		if (p->status == 0 && p->got >= 4) {
			for (uint32_t i = 4; i < p->got && i < 4u + p->buf[3]; i++) {
				p->has_80 |= p->buf[i] == 0x80;
				p->has_83 |= p->buf[i] == 0x83;
				p->has_b0 |= p->buf[i] == 0xb0;
			}
		}
		break;
	case P_80:
		if (p->status == 0)
			bm_parse_vpd80(p->buf, p->got, &dev->inq);
		break;
	case P_83:
		if (p->status == 0)
			bm_parse_vpd83(p->buf, p->got, &dev->inq);
		break;
	case P_B0:
		if (p->status < 0 || bm_parse_vpdb0(p->buf, p->got, &p->max_blocks) < 0)
			p->max_blocks = 0;
		break;
	case P_CAP: {
		uint64_t blocks = 0;
		if (p->status < 0 || bm_parse_readcap16(p->buf, p->got, &blocks, &dev->block_bytes) < 0) {
			probe_fail(p, p->status < 0 ? p->status : -EPROTO, "%s: READ CAPACITY(16) failed: %s", dev->name,
				   p->status < 0 ? p->cmd_err : "bad response");
			return;
		}
		dev->size_bytes = blocks * dev->block_bytes;
		if (p->max_blocks && (uint64_t)p->max_blocks * dev->block_bytes < UINT32_MAX)
			dev->bl_max_bytes = p->max_blocks * dev->block_bytes;
		p->rc = 0;
		p->step = P_DONE;
		return;
	}
	case P_DONE:
		return;
	}
	/* the next VPD page the LUN lists, then the capacity */
	for (p->step++; p->step < P_CAP; p->step++) {
		if (p->step == P_80 && p->has_80) {
			probe_send(p, 1, 0x80, 255);
			return;
		}
		if (p->step == P_83 && p->has_83) {
			probe_send(p, 1, 0x83, sizeof(p->buf));
			return;
		}
		if (p->step == P_B0 && p->has_b0) {
			probe_send(p, 1, 0xb0, 64);
			return;
		}
	}
	probe_send(p, 0, 0, 32);
}

/* Parse the LUN's URL into dev and start its login. */
static void probe_start(struct probe *p, const char *url)
{
	struct blkmap_dev *dev = p->dev;
	struct iscsi_context *tmp;
	struct iscsi_url *u;

	dev->kind = BLKMAP_DEV_ISCSI;
	tmp = iscsi_create_context(dev->ctx->initiator);
	if (!tmp) {
		probe_fail(p, -ENOMEM, "blkmap: cannot create an iSCSI context");
		return;
	}
	u = iscsi_parse_full_url(tmp, url);
	if (!u) {
		probe_fail(p, -EINVAL, "%s: not an iSCSI LUN URL (iscsi://[user%%pass@]host[:port]/target/lun): %s", url,
			   iscsi_get_error(tmp));
		iscsi_destroy_context(tmp);
		return;
	}
	snprintf(dev->portal, sizeof(dev->portal), "%s", u->portal);
	snprintf(dev->target, sizeof(dev->target), "%s", u->target);
	snprintf(dev->user, sizeof(dev->user), "%s", u->user);
	snprintf(dev->passwd, sizeof(dev->passwd), "%s", u->passwd);
	dev->lun = u->lun;
	iscsi_destroy_url(u);
	iscsi_destroy_context(tmp);
	snprintf(dev->name, sizeof(dev->name), "iscsi://%s/%s/%d", dev->portal, dev->target, dev->lun);
	{
		/* a per-device ISID: random, but kept for every login of this device */
		uint64_t r = (uint64_t)bm_now_ms() * 6364136223846793005ull ^ (uint64_t)(uintptr_t)dev ^
			     ((uint64_t)getpid() << 32);
		r ^= r >> 29;
		dev->isid_rnd = (uint32_t)(r & 0xffffff);
		dev->isid_qual = (uint32_t)((r >> 24) & 0xffff);
	}
	dev->block_bytes = 512; /* until READ CAPACITY says otherwise */
	dev->size_bytes = 0;
	dev->backoff_ms = BACKOFF_FIRST_MS;
	dev->opening = 1;
	dev->probe = p;
	p->step = P_LOGIN;
	start_connect(dev);
}

int bm_iscsi_open_many(struct blkmap_dev **devs, const char *const *urls, int *rcs, char **errs, size_t errlen,
		       unsigned n)
{
	struct blkmap_ctx *ctx = n ? devs[0]->ctx : NULL;
	struct probe *p;
	int first = 0;

	if (n == 0)
		return 0;
	first = ctx->depth > 0 ? bm_err(ctx, -EDEADLK, "blkmap: a sync open from inside a completion callback") : 0;
	p = first ? NULL : calloc(n, sizeof(*p));
	if (!p) {
		if (!first)
			first = bm_err(ctx, -ENOMEM, "blkmap: out of memory opening %u devices", n);
		for (unsigned i = 0; i < n; i++) {
			rcs[i] = first;
			if (errs)
				snprintf(errs[i], errlen, "%s", blkmap_errstr(ctx));
		}
		return first;
	}
	for (unsigned i = 0; i < n; i++) {
		p[i].dev = devs[i];
		probe_start(&p[i], urls[i]);
	}
	for (;;) {
		int pending = 0, rc;
		for (unsigned i = 0; i < n; i++) {
			probe_advance(&p[i]);
			pending |= p[i].step != P_DONE;
		}
		if (!pending)
			break;
		rc = blkmap_run_once(ctx, 200);
		if (rc < 0) {
			char why[300];
			snprintf(why, sizeof(why), "%s", blkmap_errstr(ctx));
			for (unsigned i = 0; i < n; i++)
				if (p[i].step != P_DONE)
					probe_fail(&p[i], rc, "%s: %s", devs[i]->name, why);
			break;
		}
	}
	for (unsigned i = 0; i < n; i++) {
		devs[i]->probe = NULL;
		devs[i]->opening = 0;
		rcs[i] = p[i].rc;
		if (errs && p[i].rc < 0)
			snprintf(errs[i], errlen, "%s", p[i].err);
	}
	/* the context's error is the first failure's */
	for (unsigned i = n; i-- > 0;) {
		if (p[i].rc < 0) {
			first = p[i].rc;
			bm_err(ctx, p[i].rc, "%s", p[i].err);
		}
	}
	free(p);
	return first;
}

int bm_iscsi_open(struct blkmap_dev *dev, const char *url)
{
	int rc;
	return bm_iscsi_open_many(&dev, &url, &rc, NULL, 0, 1);
}

static void logout_cb(struct iscsi_context *isc, int status, void *data, void *priv)
{
	(void)isc;
	(void)status;
	(void)data;
	((struct blkmap_dev *)priv)->logout = 2;
}

static int logout_idle(const struct blkmap_dev *dev)
{
	return dev->kind == BLKMAP_DEV_ISCSI && dev->isc && dev->state == BM_UP && !dev->infl_head && !dev->logout;
}

void bm_iscsi_logout_all(struct blkmap_ctx *ctx)
{
	struct blkmap_dev **devs;
	struct pollfd *pf;
	struct bm_sigpipe g;
	unsigned n = 0, *at;
	int64_t deadline = bm_now_ms() + 1000;

	if (ctx->depth > 0)
		return;
	proto_list_for_each(d, &ctx->devs, struct blkmap_dev, link)
		n += logout_idle(d);
	if (n < 2)
		return; /* one session logs out as it closes */
	devs = calloc(n, sizeof(*devs));
	pf = calloc(n, sizeof(*pf));
	at = calloc(n, sizeof(*at));
	if (!devs || !pf || !at)
		goto out;
	n = 0;
	bm_sigpipe_block(&g);
	proto_list_for_each(d, &ctx->devs, struct blkmap_dev, link) {
		if (!logout_idle(d))
			continue;
		/* the session leaves the context's loop: its replies are read here, as a sync logout would */
		bm_src_remove(d);
		d->logout = 1;
		if (iscsi_logout_async(d->isc, logout_cb, d) != 0)
			d->logout = 2;
		else
			devs[n++] = d;
	}
	for (;;) {
		unsigned k = 0;
		int64_t left = deadline - bm_now_ms();
		for (unsigned i = 0; i < n; i++) {
			if (devs[i]->logout != 1)
				continue;
			pf[k].fd = iscsi_get_fd(devs[i]->isc);
			pf[k].events = (short)iscsi_which_events(devs[i]->isc);
			pf[k].revents = 0;
			at[k++] = i;
		}
		if (k == 0 || left <= 0)
			break;
		if (poll(pf, k, (int)left) < 0 && errno != EINTR)
			break;
		for (unsigned j = 0; j < k; j++)
			if (pf[j].revents && iscsi_service(devs[at[j]]->isc, pf[j].revents) < 0)
				devs[at[j]]->logout = 2;
	}
	bm_sigpipe_restore(&g);
out:
	/* answered or not, no second logout when the devices close */
	proto_list_for_each(d, &ctx->devs, struct blkmap_dev, link)
		if (d->logout == 1)
			d->logout = 2;
	free(devs);
	free(pf);
	free(at);
}

void bm_iscsi_close(struct blkmap_dev *dev)
{
	if (dev->isc && dev->state == BM_UP && !dev->logout) {
		/* a polite logout when nothing is in flight; bounded, and skipped from callbacks */
		if (!dev->infl_head && dev->ctx->depth == 0) {
			struct bm_sigpipe g;
			iscsi_set_timeout(dev->isc, 1);
			bm_src_remove(dev);
			bm_sigpipe_block(&g);
			iscsi_logout_sync(dev->isc);
			bm_sigpipe_restore(&g);
		}
	}
	teardown(dev);
	set_state(dev, BM_DOWN);
	/* what was in flight fails: the device is going away */
	while (dev->infl_head) {
		struct bm_cmd *c = dev->infl_head;
		inflight_remove(dev, c);
		if (c->task) {
			scsi_free_scsi_task(c->task);
			c->task = NULL;
		}
		if (!c->req) {
			if (dev->restore_cmd == c)
				dev->restore_cmd = NULL;
			bm_cmd_free(c);
			continue;
		}
		bm_cmd_finish(c, -ECANCELED, "%s: device closed", dev->name);
	}
}
