/* pnfs-mds internals shared by the server's files: the server, connections, NFSv4.1 clients,
 * sessions and slots, stateids and the files they refer to, and one COMPOUND in progress.
 * Everything here is touched only from the event loop's thread. Not a public header. */
#ifndef MDS_SERVER_H
#define MDS_SERVER_H

#include <netinet/in.h>
#include <stdint.h>
#include <sys/socket.h>

#include "nfs41.h"
#include "proto/compound.h"
#include "proto/list.h"
#include "proto/rpc.h"

#include "mds/arena.h"
#include "mds/config.h"
#include "mds/loop.h"
#include "mds/map.h"
#include "mds/mds.h"
#include "mds/store.h"

struct blkmap_ctx;
struct blkmap_vol;
struct mds_pool;
struct mds_compound;
struct mds_session;
struct mds_client;
struct mds_file;
struct mds_io;
struct mds_layouts;

/* ---- limits and fixed choices ------------------------------------------------------------- */
#define MDS_MAX_OPS 128                 /* most operations per COMPOUND we negotiate */
#define MDS_MAX_IO_BYTES (1u << 20)     /* maxread / maxwrite */
#define MDS_OUTQ_PAUSE_BYTES (8u << 20) /* stop reading a connection whose replies pile up */
#define MDS_CB_TIMEOUT_MS 10000         /* a backchannel call not answered by then fails */
#define MDS_MAX_CONN_PER_SESSION 16
#define MDS_FH_BYTES 26                 /* our filehandle: version, pool id, fileid, checksum */

/* ---- credentials ------------------------------------------------------------------------ */
struct mds_cred {
	uint32_t flavor;       /* AUTH_NONE or AUTH_SYS */
	uint32_t uid, gid;     /* after export squashing */
	uint32_t ngids;
	uint32_t gids[16];
	char machine[256];
	uint32_t raw_uid;      /* as sent, for principals (EXCHANGE_ID) */
};

/* ---- connections ----------------------------------------------------------------------- */
struct mds_outbuf {
	struct mds_outbuf *next;
	size_t len, off;
	unsigned char data[];
};

struct mds_conn {
	struct mds_server *srv;
	struct proto_list link;        /* on the server's conns */
	int fd;
	uint64_t id;
	struct sockaddr_storage peer;
	char peer_str[80];
	struct proto_rm_reader rr;     /* record reassembly, capped at max-record */
	/* Output queue. */
	struct mds_outbuf *out_head, *out_tail;
	size_t out_bytes;
	int read_paused;
	int refs;                      /* compounds in flight hold a reference */
	int dead;                      /* closed: fd is -1, waiting for refs to drop */
	struct mds_session *bc_session; /* sessions whose backchannel this connection carries */
	/* Login: until a session is set up on it, the connection lives for login-timeout at most. */
	int established;               /* CREATE_SESSION, SEQUENCE or BIND_CONN_TO_SESSION succeeded */
	uint64_t login_timer;          /* drops it when it fires (0: none) */
	uint64_t bytes_in;             /* read from the socket */
	uint64_t records_in;           /* whole records among them */
	uint64_t partial_bytes;        /* of a record not yet complete (its marks included) */
};

/* ---- sessions ------------------------------------------------------------------------ */
struct mds_slot {
	uint32_t seqid;          /* last sequence id seen (0: none yet) */
	int busy;                /* a request on this slot is being executed */
	int has_reply;           /* a reply is cached (full, or only SEQUENCE when !cachethis) */
	int cached_full;         /* the whole reply was cached (sa_cachethis) */
	unsigned char *reply;    /* COMPOUND4res bytes (no RPC header) */
	size_t reply_len;
	uint64_t args_hash;      /* hash of the request's operations: false-retry detection */
};

struct mds_cb_call;

struct mds_session {
	unsigned char id[NFS4_SESSIONID_SIZE];
	struct mds_client *clp;
	struct proto_list in_client;   /* on clp->sessions */
	channel_attrs4 fore, back;  /* negotiated (ca_rdma_ird empty) */
	uint32_t nslots;
	struct mds_slot *slots;
	uint32_t flags;             /* CREATE_SESSION4_FLAG_* granted */
	uint32_t minorversion;      /* of the CREATE_SESSION: CB_COMPOUNDs use the same */
	/* Connections bound to the fore channel (BIND_CONN_TO_SESSION or the creating one). */
	struct mds_conn *conns[MDS_MAX_CONN_PER_SESSION];
	unsigned nconns;
	/* Backchannel. */
	uint32_t cb_program;
	uint32_t cb_flavor;         /* AUTH_NONE or AUTH_SYS (GSS refused) */
	uint32_t cb_uid, cb_gid;
	char cb_machine[256];
	struct mds_conn *bc_conn;   /* NULL: no backchannel connection */
	uint32_t cb_seqid;          /* backchannel slot 0 */
	int cb_busy;                /* a CB_COMPOUND is outstanding on slot 0 */
	int cb_fault;               /* the client answered a callback wrongly */
	int cb_probed;              /* CB_NULL answered */
	struct mds_cb_call *cb_queue; /* calls waiting for slot 0 */
	int refs;                   /* compounds running on it */
	int destroyed;              /* unlinked; freed when refs drops */
};

/* ---- clients -------------------------------------------------------------------------- */
struct mds_client {
	clientid4 clientid;
	unsigned char verifier[NFS4_VERIFIER_SIZE];
	unsigned char *owner;       /* co_ownerid */
	uint32_t owner_len;
	char principal[96];         /* "sys:UID@MACHINE" or "none": who may change this record */
	int confirmed;
	uint32_t eia_flags;         /* flags as granted in the EXCHANGE_ID reply */
	uint32_t cs_seq;            /* next CREATE_SESSION sequence id expected */
	/* CREATE_SESSION reply cache (RFC 8881 §18.36.4): the last result, replayed for a retry. */
	int cs_cached;
	CREATE_SESSION4res cs_res;
	uint64_t lease_expire_ms;
	int expired;                /* lease ran out; kept as a courtesy until a conflict */
	int reclaim_ok;             /* had a record from before the restart: may reclaim in grace */
	int reclaim_complete;       /* RECLAIM_COMPLETE done */
	int persisted;              /* a client record is in the store */
	int scsi_layout_given;      /* some LAYOUTGET of type SCSI was granted to it */
	int mds_io_noted;           /* its MDS-path I/O after that was logged (once) */
	uint32_t rpc_prog;
	struct proto_list sessions;    /* by mds_session.in_client */
	struct mds_stateid *states; /* every stateid of this client */
	struct mds_map openowners;  /* owner bytes -> struct mds_owner */
	struct mds_map lockowners;
	int refs;                   /* compounds running for it */
	int destroyed;
	struct mds_client *replaces; /* unconfirmed record that supersedes this confirmed one */
};

/* ---- state ---------------------------------------------------------------------------- */
enum mds_state_type {
	MDS_ST_OPEN = 1,
	MDS_ST_LOCK = 2,
	MDS_ST_DELEG = 3,
	MDS_ST_LAYOUT = 4,
};

struct mds_owner {
	struct mds_client *clp;
	int is_lock;
	unsigned char *owner;
	uint32_t owner_len;
	int nstates;                 /* stateids referring to this owner */
};

struct mds_lock {
	struct proto_list link;      /* on the file's locks */
	struct mds_stateid *st;      /* lock stateid holding it */
	uint64_t offset, length;     /* length NFS4_UINT64_MAX: to the end */
	int write;
};

struct mds_stateid {
	enum mds_state_type type;
	uint32_t seqid;
	unsigned char other[NFS4_OTHER_SIZE];
	struct mds_client *clp;
	struct mds_file *file;
	struct mds_owner *owner;
	struct mds_stateid *next_in_client, *prev_in_client;
	struct mds_stateid *next_in_file, *prev_in_file;
	/* OPEN */
	uint32_t share_access, share_deny;
	uint32_t access_bmap, deny_bmap;  /* every access/deny combination obtained (downgrades) */
	struct mds_stateid *open;         /* LOCK: the open it came from */
	int revoked;
	/* DELEG: a recall is out since recall_ms (0: none). */
	uint64_t recall_ms;
	/* LAYOUT and others plug in here (issue 6). */
	void *layout;
};

/* A file with in-memory state (opens, locks, layouts), found by fileid. */
struct mds_file {
	uint64_t fileid;
	struct mds_stateid *states;   /* open/lock/layout stateids on this file */
	struct proto_list locks;      /* by mds_lock.link, newest first */
	int refs;                     /* states + compounds holding it */
	int orphaned;                 /* its last name is gone; destroyed at the last close */
	/* MDS-path data operations run one at a time per file (read-modify-write of partial
	 * blocks must not interleave); the others wait here. */
	int io_busy;
	struct mds_io *io_active;     /* the one running (NULL when none) */
	struct mds_io *io_head, *io_tail;
};

/* ---- filehandles -------------------------------------------------------------------------- */
struct mds_fh {
	int set;
	uint64_t fileid;
};

/* ---- one COMPOUND ------------------------------------------------------------------------- */
typedef nfsstat4 mds_op_fn(struct mds_compound *c, nfs_argop4 *arg, nfs_resop4 *res);

/* Memory a result holds that the arena does not own (e.g. fattr4 from proto_fattr_encode). */
struct mds_deferred_free {
	struct mds_deferred_free *next;
	xdrproc_t proc;
	void *obj;
};

struct mds_compound {
	struct mds_server *srv;
	struct mds_conn *conn;
	uint32_t xid;
	struct mds_cred cred;
	struct mds_export_rule rule;  /* the export rule that admitted this client (copy) */
	int have_rule;                /* 0: the client's address matches no export rule */
	uint32_t minorversion;
	/* Decoded request (proto/compound.h). */
	struct proto_compound_args pargs;
	size_t req_len;               /* the whole RPC record (ca_maxrequestsize counts it) */
	uint64_t args_hash;           /* of the operations (false-retry detection) */
	/* Results. */
	nfs_resop4 *res;
	unsigned nres;
	size_t reply_bytes;           /* encoded size of the reply so far */
	size_t reply_limit;           /* the most it may grow to */
	uint32_t tail_op;             /* an NFSv4.2 op answered NFS4ERR_NOTSUPP after the results
					 (proto codes only 4.1 results); 0: none */
	struct mds_deferred_free *deferred;
	/* Session context (after SEQUENCE). */
	struct mds_session *sess;
	struct mds_client *clp;       /* the session's client (referenced) */
	struct mds_slot *slot;
	uint32_t slot_prev_seqid;
	int cachethis;
	/* Filehandles and stateids. */
	struct mds_fh cfh, sfh;
	stateid4 cur_sid, saved_sid;
	int cur_sid_set, saved_sid_set;
	/* Store transaction: begun lazily, one per COMPOUND (ended early before asynchronous I/O). */
	struct mds_txn *txn;
	int dirty;
	int batched;                  /* its changes are in the open batch (not yet durable) */
	struct mds_compound *held_next; /* its reply is held for the batch's commit */
	/* Memory for results. */
	struct mds_arena arena;
	/* Asynchronous operation (MDS-path I/O): the handler returns MDS_ASYNC and later calls
	 * mds_compound_resume() with the operation's status. */
	unsigned op_index;
	int replayed;                 /* answered from the reply cache: nothing else to do */
	void *op_ctx;                 /* the running asynchronous op's state */
};

/* A handler returns this (not an nfsstat4) when it continues asynchronously. */
#define MDS_ASYNC ((nfsstat4)-1)

/* ---- the server --------------------------------------------------------------------------- */
#define MDS_MAX_VOL_ENTRIES 1024 /* BLKMAP_MAX_VOLUMES: entries of the pool's volume array */

struct mds_server {
	struct mds_config cfg;
	struct mds_loop *loop;
	int listen_fd;
	int port;
	int signal_fd;
	int pool_lock_fd;
	struct mds_guard *guard;    /* heartbeat on LUN 0 (mds/guard.h) */
	int fatal;                  /* why the loop was stopped, when it is a failure (-errno) */           /* DIR/mds.lock, held while serving (mds/pool_lock.h) */
	mds_reload_fn *reload;
	void *reload_arg;
	/* Connections. */
	struct proto_list conns;         /* by mds_conn.link */
	struct proto_list probes;        /* backchannel probes under way (backchannel.c) */
	unsigned nconns;
	uint64_t next_conn_id;
	unsigned nconns_unestablished;   /* connections without a session yet */
	uint64_t conns_refused;          /* turned away at accept (max-connections, shutting down) */
	uint64_t login_timeouts;         /* dropped for having no session after login-timeout */
	uint64_t net_bytes_received;     /* every byte read from / written to client sockets */
	uint64_t net_bytes_sent;
	/* MDS-path file data: READs and WRITEs answered, and their payload bytes. */
	uint64_t data_reads, data_read_bytes;
	uint64_t data_writes, data_written_bytes;
	/* Pool. */
	struct mds_store *store;
	struct mds_pool *pool;
	struct blkmap_ctx *bctx;
	struct blkmap_vol *vol;
	uint64_t boot;
	uint32_t luns_out;             /* LUNs out of service at the last look (backend.c) */
	uint32_t block_bytes;
	uint64_t volume_bytes;
	uint64_t root_fileid;
	unsigned char pool_id[8];
	unsigned char write_verf[NFS4_VERIFIER_SIZE];
	/* MDS-path data left in the LUNs' write caches (mds/data.c): COMMIT flushes while any is. */
	uint64_t data_unflushed_gen;     /* bumped by each such write */
	uint64_t data_flushed_gen;       /* the value the last successful flush covered */
	uint64_t data_unflushed_logins;  /* the LUNs' iSCSI logins when the first of them was written */
	uint8_t data_unflushed_leaves[MDS_MAX_VOL_ENTRIES]; /* pool volume entries (leaves) they went to */
	unsigned char server_owner[32];
	/* Clients and state. */
	struct mds_map clients;          /* clientid -> client */
	struct mds_map conf_by_owner;    /* owner bytes -> confirmed client */
	struct mds_map unconf_by_owner;  /* owner bytes -> unconfirmed client */
	struct mds_map sessions;         /* sessionid -> session */
	struct mds_map stateids;         /* other -> stateid */
	struct mds_map files;            /* fileid -> file */
	uint32_t next_clientid;
	uint32_t next_session;
	uint64_t next_stateid;
	/* Grace. */
	int in_grace;
	uint64_t grace_end_ms;
	struct mds_map reclaimable;      /* owner bytes -> (void*)1: records from before the restart */
	unsigned nreclaimable;
	unsigned nrecalls;               /* delegations being recalled */
	unsigned io_pending;             /* MDS-path data operations started, not yet finished */
	/* Backchannel calls in flight (XID -> call). */
	struct mds_map cb_calls;
	uint32_t next_cb_xid;
	/* The store transaction open right now (a running COMPOUND's), so that work started from
	 * inside it (closing an orphan) joins it instead of deadlocking on a second writer. */
	struct mds_txn *cur_txn;
	int *cur_dirty;
	/* Group commit: the compounds that ran in one turn of the loop make their changes in nested
	 * transactions of one batch transaction, committed once at the end of the turn; their replies
	 * wait in `held` (oldest first). That commit syncs the data pages and only writes the meta
	 * page (mds_txn_commit_unsynced_meta); its replies move to `unsynced` and go out after the
	 * next sync of the store's file: the next turn's commit, or an fdatasync when that turn has
	 * nothing to commit. Under load one sync per turn makes a batch durable instead of two. */
	struct mds_txn *batch_txn;
	int batch_dirty;
	struct mds_compound *held, **held_tail;
	struct mds_compound *unsynced, **unsynced_tail;
	int meta_unsynced;               /* a commit whose meta page is not yet synced */
	uint64_t store_commits;          /* batch commits (each one durable write transaction) */
	uint64_t grouped_compounds;      /* changing compounds those commits carried */
	/* Timers. */
	uint64_t lease_timer;
	int stopping;
	/* pNFS layouts, fencing and metrics (layout.c). */
	struct mds_layouts *layouts;
};

/* ---- server.c ----------------------------------------------------------------------------- */
uint32_t mds_lease_s(const struct mds_server *srv);
void mds_grace_end(struct mds_server *srv, const char *why);
/* Run fn in the open transaction (it commits with its COMPOUND) or in a new one committed now. */
int mds_with_txn(struct mds_server *srv, int (*fn)(struct mds_txn *t, void *arg), void *arg);
/* Commit the batch of this turn of the loop (one durable transaction) and send the replies held
 * for it, in order; after a failed commit each of them says NFS4ERR_SERVERFAULT. Run at the end of
 * every turn, before any other write transaction, and at shutdown. 0 or the commit's error. */
int mds_batch_commit(struct mds_server *srv);
/* The end of a turn: commit the batch with its meta page unsynced and send the replies an earlier
 * such commit held (this commit's data sync made them durable), or, with nothing to commit, sync
 * and send every held reply. Returns 1 when replies still wait (the loop must not sleep). */
int mds_batch_turn_end(struct mds_server *srv);

/* ---- backend.c: the pool (store + volume on the LUNs) ---------------------------------------- */
int mds_server_open_pool(struct mds_server *srv, char *err, size_t errlen);
void mds_server_close_pool(struct mds_server *srv);

/* ---- conn.c ------------------------------------------------------------------------------- */
/* Queue bytes (copied) on the connection; sent as the socket allows. Dropped if it is dead. */
int mds_conn_send(struct mds_conn *conn, const void *buf, size_t len);
/* Queue a complete RPC message as one record (adds the record mark). */
int mds_conn_send_record(struct mds_conn *conn, const void *msg, size_t len);
void mds_conn_get(struct mds_conn *conn);
void mds_conn_put(struct mds_conn *conn);
/* Close now (in-flight compounds see it dead; their replies are dropped). */
void mds_conn_close(struct mds_conn *conn, const char *why);
int mds_conn_accept(struct mds_server *srv, int fd, const struct sockaddr_storage *peer);
/* A session is set up on the connection: it is no longer dropped for login-timeout. */
void mds_conn_established(struct mds_conn *conn);
/* "ADDR:PORT" of an IPv4 or IPv6 socket address ("?:0" for others) into buf. */
void mds_sockaddr_str(const struct sockaddr_storage *ss, char *buf, size_t len);

/* ---- rpc.c -------------------------------------------------------------------------------- */
/* One complete record arrived on conn (borrowed): a call to serve or a backchannel reply. */
void mds_rpc_record(struct mds_conn *conn, unsigned char *rec, size_t len);
/* Send an accepted SUCCESS reply whose body is body (already XDR-encoded). */
int mds_rpc_reply_success(struct mds_conn *conn, uint32_t xid, const void *body, size_t len);

/* ---- state.c ------------------------------------------------------------------------------ */
struct mds_client *mds_client_find(struct mds_server *srv, clientid4 id);
void mds_client_renew(struct mds_server *srv, struct mds_client *clp);
/* Destroy a client with every session and state it has (and its store record when del_rec). */
void mds_client_destroy(struct mds_server *srv, struct mds_client *clp, int del_rec);
struct mds_session *mds_session_find(struct mds_server *srv, const unsigned char *id);
void mds_session_destroy(struct mds_server *srv, struct mds_session *s);
/* Detach a dead connection from every session. */
void mds_state_conn_gone(struct mds_server *srv, struct mds_conn *conn);
/* Lease timer: expire clients whose lease ran out. */
void mds_state_expire(struct mds_server *srv);
void mds_state_free_all(struct mds_server *srv);

#endif
