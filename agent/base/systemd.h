/* SPDX-License-Identifier: MIT */
/* systemctl of the root and sshd's unit (systemd.c). */
#ifndef HPCINIT_SYSTEMD_H
#define HPCINIT_SYSTEMD_H

#include "hpcinit.h"

/*
 * systemctl of the root: <root>/usr/bin/systemctl, else /bin/systemctl (the
 * same file on merged-/usr systems).  Under a fake root it is the root's
 * own, which is how tests stand in for a running systemd.  malloc'd, NULL
 * when there is none.
 */
char *systemctl_path(const struct ctx *c);
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

#endif
