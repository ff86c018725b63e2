/* NFSv4.1 state held in memory: clients, sessions, stateids (open, lock, delegation; layouts plug
 * in later), open and lock owners, and the files they refer to. The rules that decide protocol
 * outcomes live in the op handlers; this module owns lifetimes and lookups. Internal header. */
#ifndef MDS_STATE_H
#define MDS_STATE_H

#include "mds/server.h"

/* ---- clients ---------------------------------------------------------------------------- */
/* A new unconfirmed client record. Returns NULL on allocation failure. */
struct mds_client *mds_client_new(struct mds_server *srv, const unsigned char *owner, uint32_t owner_len,
				  const unsigned char *verifier, const char *principal);
/* The confirmed / unconfirmed record for an owner (either may be NULL). */
struct mds_client *mds_client_conf_by_owner(struct mds_server *srv, const void *owner, uint32_t len);
struct mds_client *mds_client_unconf_by_owner(struct mds_server *srv, const void *owner, uint32_t len);
/* An unconfirmed record becomes confirmed (replacing any confirmed record of the same owner,
 * which is destroyed with its state). */
void mds_client_confirm(struct mds_server *srv, struct mds_client *clp);
/* Whether the client holds anything: sessions or stateids. */
int mds_client_has_state(const struct mds_client *clp);
/* "sys:UID@MACHINE" / "none" for a credential. */
void mds_cred_principal(const struct mds_cred *cred, char *out, size_t len);

/* ---- sessions --------------------------------------------------------------------------- */
struct mds_session *mds_session_new(struct mds_server *srv, struct mds_client *clp,
				    const channel_attrs4 *fore, const channel_attrs4 *back);
/* Bind a connection to a session's fore channel (idempotent). -ENOSPC when full. */
int mds_session_bind_conn(struct mds_session *s, struct mds_conn *conn);
int mds_session_conn_bound(const struct mds_session *s, const struct mds_conn *conn);
/* Make conn this session's backchannel connection. */
void mds_session_set_backchannel(struct mds_session *s, struct mds_conn *conn);

/* ---- files ---------------------------------------------------------------------------- */
struct mds_file *mds_file_get(struct mds_server *srv, uint64_t fileid);   /* creates; ref++ */
struct mds_file *mds_file_find(struct mds_server *srv, uint64_t fileid);  /* no ref */
void mds_file_put(struct mds_server *srv, struct mds_file *f);

/* ---- owners ---------------------------------------------------------------------------- */
struct mds_owner *mds_owner_lookup(struct mds_server *srv, struct mds_client *clp, int is_lock,
				const void *owner, uint32_t len, int create);

/* ---- stateids ---------------------------------------------------------------------------- */
struct mds_stateid *mds_stateid_new(struct mds_server *srv, struct mds_client *clp, struct mds_file *f,
				    struct mds_owner *ow, enum mds_state_type type);
void mds_stateid_free(struct mds_server *srv, struct mds_stateid *st);
/* The wire form of a stateid. */
void mds_stateid_export(const struct mds_stateid *st, stateid4 *out);
/* Find by "other": NULL if unknown. *stale set when it is from an earlier server instance. */
struct mds_stateid *mds_stateid_find(struct mds_server *srv, const stateid4 *sid, int *stale);

enum mds_special_sid {
	MDS_SID_NORMAL = 0,
	MDS_SID_ANON,       /* all zeros */
	MDS_SID_BYPASS,     /* all ones: READ bypass */
	MDS_SID_CURRENT,    /* seqid 1, other zero */
	MDS_SID_INVALID,    /* seqid ~0, other zero */
	MDS_SID_BAD,        /* other zero or ones with another seqid */
};
enum mds_special_sid mds_stateid_special(const stateid4 *sid);

/* The open stateid a client holds on a file through an owner, or NULL. */
struct mds_stateid *mds_open_find(struct mds_file *f, struct mds_owner *ow);
/* The lock stateid of a lock owner on a file, or NULL. */
struct mds_stateid *mds_lockstate_find(struct mds_file *f, struct mds_owner *ow);
/* The union of share access and deny of a file's opens, excluding one stateid (may be NULL). */
void mds_file_share_union(const struct mds_file *f, const struct mds_stateid *except, uint32_t *access,
			  uint32_t *deny);

/* Remove every lock a lock stateid holds. */
void mds_locks_release_state(struct mds_file *f, struct mds_stateid *st);

#endif

/* ---- stateids as operation arguments (stateid.c) ---------------------------------------- */
struct mds_compound;
#define MDS_STM(t) (1u << (t))
/* Resolve a stateid argument: the current stateid (seqid 1, other 0) becomes the COMPOUND's
 * current stateid (NFS4ERR_BAD_STATEID when there is none). */
nfsstat4 mds_sid_resolve(struct mds_compound *c, const stateid4 *in, stateid4 *out);
/* Find the state a (resolved) stateid names, of one of the types in mask, owned by the
 * COMPOUND's client, with seqid rules (0 = current; older: OLD_STATEID; newer: BAD_STATEID). */
nfsstat4 mds_sid_lookup(struct mds_compound *c, const stateid4 *sid, unsigned type_mask,
			struct mds_stateid **out);
/* mds_sid_resolve() then mds_sid_lookup(): the state a stateid argument names. */
nfsstat4 mds_sid_find(struct mds_compound *c, const stateid4 *in, unsigned type_mask, struct mds_stateid **out);
/* The same for state that must be on the current file (NFS4ERR_BAD_STATEID otherwise). */
nfsstat4 mds_sid_find_cfh(struct mds_compound *c, const stateid4 *in, unsigned type_mask,
			  struct mds_stateid **out);
/* The stateid of a READ, WRITE or SETATTR(size) on the current file: special stateids are
 * checked against share reservations; *st gets the state (NULL for special ones). */
nfsstat4 mds_sid_check_io(struct mds_compound *c, const stateid4 *sid, uint64_t fileid, int write,
			  struct mds_stateid **st);
/* Make st the COMPOUND's current stateid. */
void mds_sid_set_current(struct mds_compound *c, const struct mds_stateid *st);
/* Bump a stateid's seqid (never to 0: it means "current" on the wire). */
void mds_stateid_bump(struct mds_stateid *st);

/* Release references taken by a COMPOUND. */
void mds_client_release(struct mds_client *clp);
void mds_session_release(struct mds_session *s);
/* Whether the client holds state that needs a backchannel (delegations, layouts). */
int mds_client_needs_backchannel(const struct mds_client *clp);

/* ---- delegations (deleg.c) --------------------------------------------------------------- */
/* A delegation stateid is being freed. */
void mds_deleg_freed(struct mds_server *srv, struct mds_stateid *st);
/* Once a second: revoke delegations whose recall went unanswered too long. */
void mds_deleg_tick(struct mds_server *srv, uint64_t now_ms);
