/* Export rules: which client networks may use the server, read-only or read-write, and how AUTH_SYS
 * identities are squashed. A rule is `CLIENTS OPTIONS` (exportfs style): CLIENTS is `*`, an address
 * or a CIDR network; the first rule matching a client's address applies, no match means no access. */
#ifndef MDS_EXPORT_H
#define MDS_EXPORT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define MDS_MAX_EXPORT_RULES 64
#define MDS_NOBODY_ID 65534u

enum mds_squash {
	MDS_SQUASH_NONE = 0, /* no_root_squash */
	MDS_SQUASH_ROOT = 1, /* root_squash: uid 0 / gid 0 become the anonymous ids */
	MDS_SQUASH_ALL = 2,  /* all_squash: everyone is anonymous */
};

struct mds_export_rule {
	int family;          /* 0: any client; AF_INET or AF_INET6 */
	uint8_t addr[16];    /* network address, in network order (4 bytes used for AF_INET) */
	unsigned prefix_bits;
	int rw;
	enum mds_squash squash;
	uint32_t anon_uid, anon_gid;
	char text[160];      /* the rule as written, for logs */
};

struct mds_exports {
	int n;
	struct mds_export_rule rules[MDS_MAX_EXPORT_RULES];
};

/* Parse one rule ("10.0.0.0/8 rw,root_squash", "* ro", "::1 rw,no_root_squash,anonuid=99").
 * Options: rw | ro, root_squash | no_root_squash | all_squash, anonuid=N, anongid=N; as with
 * exportfs, a rule without options is ro,root_squash. Returns 0 or -EINVAL with a reason in err. */
int mds_export_parse_rule(const char *text, struct mds_export_rule *out, char *err, size_t errlen);

/* Append a parsed rule; -ENOSPC past MDS_MAX_EXPORT_RULES. */
int mds_exports_add(struct mds_exports *ex, const struct mds_export_rule *rule);

/* The first rule matching a client address (IPv4-mapped IPv6 addresses match IPv4 rules), or
 * NULL: that client may not use the server. */
const struct mds_export_rule *mds_export_match(const struct mds_exports *ex, const struct sockaddr *sa);

/* Apply a rule's squashing to an AUTH_SYS identity in place (gids: the supplementary list). */
void mds_export_squash(const struct mds_export_rule *rule, uint32_t *uid, uint32_t *gid,
		       uint32_t *gids, unsigned ngids);

#endif
