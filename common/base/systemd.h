/* SPDX-License-Identifier: MIT */
/* systemctl of the root, sshd's unit, is systemd running, a daemon by its pid file (systemd.c). */
#ifndef HPCINIT_SYSTEMD_H
#define HPCINIT_SYSTEMD_H

#include "hpcinit.h"

/*
 * --root DIR acts on a tree (an image being built, a test's fake root), never
 * on the machine hpcinit runs on: under it no service is started, stopped,
 * restarted or reloaded, and no daemon or service manager is asked (the
 * tree's own systemctl would reach this machine's systemd; munged, slurmd
 * and sshd would be this machine's).  The one rule, asked by every step
 * before it touches a service: services_live is false on a fake root;
 * services_refused says so too and, when rep, records the information
 * finding "service.root": "WHAT: not started: --root DIR is a tree, not
 * this machine".
 */
bool services_live(const struct ctx *c);
bool services_refused(const struct ctx *c, struct report *rep, const char *what);
/*
 * systemctl of the root: /usr/bin/systemctl, else /bin/systemctl (the same
 * file on merged-/usr systems).  On a fake root none (services_live), unless
 * HPCINIT_SYSTEMCTL names a stand-in (an absolute path; tests stand in for a
 * running systemd with it).  malloc'd, NULL when there is none.
 */
char *systemctl_path(const struct ctx *c);
/* True, after services_refused's finding, when there is no systemctl to run: a fake root without a stand-in. */
bool systemctl_refused(const struct ctx *c, struct report *rep, const char *what);
/* systemctl A1 [A2] under a 30 s deadline: 0 and its stdout (when ret_out), or -errno. */
int systemctl_run(const struct ctx *c, const char *a1, const char *a2, char **ret_out);
/*
 * sshd's unit by its unit file under the root (/etc/systemd/system,
 * /usr/lib/systemd/system, /lib/systemd/system): "ssh.service" (Debian,
 * Ubuntu) or "sshd.service" (RHEL, SUSE, Azure Linux); NULL when neither is
 * there.
 */
const char *sshd_unit(const struct ctx *c);
/* systemctl VERB on sshd's unit; with none found, ssh.service, then sshd.service. */
int sshd_systemctl(const struct ctx *c, const char *verb);
/*
 * systemd runs the root (sd_booted(3): /run/systemd/system under the root
 * is a directory).  The one test of it: a step that reloads a service or
 * writes a manager drop-in asks this.
 */
#define SYSTEMD_BOOTED_DIR "/run/systemd/system"
bool systemd_booted(const struct ctx *c);
/*
 * The running daemon named comm, under c's root: the pid in pidfile (may be
 * NULL) when that process lives and /proc/PID/comm is comm; else, with
 * DAEMON_SCAN, the lowest pid named comm in /proc (on the real root only a
 * process of this network namespace: a container's or a simulated node's
 * daemon is not this node's), and with DAEMON_TOP too only one whose parent
 * is pid 1 (the daemon, not its per-connection children).  0 when none.
 * ret_how (may be NULL) says which: the pid file or "a process named comm".
 * The one reader of a daemon's pid file.
 */
enum { DAEMON_SCAN = 1u << 0, DAEMON_TOP = 1u << 1 };
pid_t daemon_pid(const struct ctx *c, const char *pidfile, const char *comm, unsigned flags,
		 char *ret_how, size_t how_len);
/*
 * The TCP sockets pid listens on: the inodes (up to max, into ino) of the
 * LISTEN sockets of its network namespace (/proc/PID/net/tcp and tcp6,
 * under c's root, every line read) that one of its descriptors holds.  How
 * many, or -errno (pid gone).  A daemon that re-executes itself to reload (sshd on SIGHUP)
 * listens again on sockets with new inodes.
 */
int daemon_listening(const struct ctx *c, pid_t pid, unsigned long long *ino, size_t max);

#endif
