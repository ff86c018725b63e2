/* pnfs mount / pnfs umount (client/mount_main.c): the pnfs command's FUSE file system. */
#ifndef CLIENT_MOUNT_H
#define CLIENT_MOUNT_H

struct pnfs_opts;

/* argv: the arguments after "mount" (URL MOUNTPOINT [-f] [-o OPTS]); opts: the client options
 * in force (flags, client.conf, PNFS_*). Returns the exit status. */
int pnfs_cli_mount(int argc, char **argv, const struct pnfs_opts *opts);
/* argv: MOUNTPOINT. Returns the exit status. */
int pnfs_cli_umount(int argc, char **argv);

#endif
