/* SPDX-License-Identifier: MIT */
/*
 * Names: the one definition of a valid host name, user name, interface
 * name, kernel module, mount/export option, glob and path.  The spec loader
 * reports these with a place; peer records and the modules call the same
 * functions, so a rule cannot differ between the spec and what a step acts on.
 *
 * check functions return NULL when the text is fine, else why not (for a
 * message); valid functions return a bool.
 */
#ifndef HPCINIT_NAMES_H
#define HPCINIT_NAMES_H

#include <stdbool.h>
#include <stddef.h>

#define NAME_PATH_MAX 4095
#define NAME_ITEM_MAX 255       /* an option, a glob */

enum name_host_flags {
	NAME_WILD = 1u << 0,            /* '*' and '?' in labels (exports(5) client wildcards) */
	NAME_UNDERSCORE = 1u << 1,      /* '_' in labels: names machines call themselves */
};

bool name_has_control(const char *s);
/* cluster.name: [a-z0-9-]{1,63}, not starting or ending with '-'. */
const char *name_check_cluster(const char *s);
/* RFC 1123 host name (at most 253, labels of 1 to 63, no '-' at a label's ends). */
bool name_hostname_valid(const char *s);
bool name_host_valid(const char *s, unsigned flags);
/* An IPv4 or IPv6 address in text form. */
bool name_ip_valid(const char *s);
/* POSIX-portable user or group name, as useradd accepts it (n bytes of s). */
bool name_user_validn(const char *s, size_t n);
bool name_user_valid(const char *s);
const char *name_check_user(const char *s);
/* pam_limits domains hpcinit writes: '*', a user or @group. */
const char *name_check_pam_domain(const char *s);
const char *name_check_module(const char *s);
/* One mount or export option (they are joined with ',' in fstab and exports). */
const char *name_check_option(const char *s);
/* One mount option: name_check_option, and port= holds a port number. */
const char *name_check_mount_option(const char *s);
/*
 * An etcd client URL: http:// or https://, a host name, IPv4 or [IPv6]
 * address, an optional :port (1 to 65535), nothing after it but a "/".
 */
const char *name_check_endpoint(const char *s);
/* slurm.conf_servers: a host name or IPv4 address, an optional :port (1 to 65535). */
const char *name_check_host_port(const char *s);
/* slurm.features: what slurm.conf's Feature= and a Nodeset's Feature= accept. */
const char *name_check_feature(const char *s);
/* Linux dev_valid_name(). */
bool name_ifname_valid(const char *s);
const char *name_check_ifname(const char *s);
/* An fnmatch(3) pattern for one name: no '/', brackets closed, no trailing '\'. */
const char *name_check_glob(const char *s);
/* An http:// or https:// URL without spaces, quotes, '\' or control characters. */
const char *name_check_url(const char *s);
/* The host of an http:// or https:// URL (brackets of an IPv6 address dropped), malloc'd; NULL when none. */
char *name_url_host(const char *url);
/*
 * localhost and its kin (localhost.localdomain, localhost6, ip6-localhost,
 * ip6-loopback, ip6-allnodes, ...): names every system keeps for itself.
 */
bool name_is_localhost(const char *s);
/*
 * a and b name the same host as a resolver would take them: equal but for
 * case, or one a short name equal to the other's first label (the resolver
 * completes "nfs01" with the search domain to "nfs01.example.com").
 */
bool name_same_host(const char *a, const char *b);
/*
 * The first address a hosts(5) text gives name (compared as
 * name_same_host does), into out; false when none.
 */
bool name_hosts_lookup(const char *text, const char *name, char *out, size_t len);
/*
 * Canonical absolute path: repeated '/' and "." components dropped, no
 * trailing '/', no "..".  malloc'd, or NULL with *why set.
 */
char *name_path_normalize(const char *s, const char **why);

#endif
