#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Build (or reuse) the Debian disk image the VM test bed boots: Debian 12
# (bookworm, the default) or Debian 13 (--suite trixie).
#
#   tests/vm/image.sh [--suite bookworm|trixie] [--debs DIR] [--keep N]
#                      prints the image directory on its last line
#   tests/vm/image.sh [--suite bookworm|trixie] --prepare
#                      builds (or reuses) only the layers that need no .deb of
#                      the caller's: the base, and for a suite other than
#                      bookworm its deb layer too; prints nothing.  tests/run-all.sh
#                      runs it in the background from its start (beside make
#                      check, whose tests mostly wait), so that on a fresh machine
#                      the VM stage finds the minutes of debootstrap done
#
# The image directory holds disk.img (raw ext4, root=/dev/vda), vmlinuz and
# initrd.img (booted with qemu -kernel/-initrd, no boot loader) and
# repo/ (the local apt repository the VMs use, also inside the image).
#
# Three layers, each cached by content under $HPCINIT_VM_CACHE (default
# /var/cache/hpcinit-vm), so a second run reuses everything and a changed
# tree rebuilds only what depends on it:
#   base/KEY   debootstrap --variant=minbase + the packages of BASE_PKGS
#              (KEY: hash of the package list and of the base_build function)
#   deb/KEY    the .debs packaging/build-deb.sh builds from this tree
#              (hpcinit, hpcinit-rdma, hpcinit-mpi; KEY: hash of the tree's
#              tracked files; or the hpcinit*.deb in --debs DIR)
#   img/KEY    base + the .deb installed with apt inside the chroot, as a
#              user would, made into disk.img (KEY: base key, the .deb's
#              hash and the final_build function)
# A newer release gets its own .debs: hpcinit built on Debian 12 does not
# install on Debian 13 (libnfs13 and libopenmpi3 are gone there: libnfs14,
# libopenmpi40), so for --suite trixie the deb layer is built inside that
# release (deb-trixie/KEY: dpkg-buildpackage of this tree's tracked files in
# an overlay of the trixie base with the Build-Depends of debian/control,
# KEY: the tree's hash, the base key and the deb_build function), as a
# distribution builds a package per release; --debs applies to bookworm only.
# Each suite other than bookworm has its own layers (base-SUITE, deb-SUITE,
# img-SUITE), so pruning one release never deletes the other's.
# HPCINIT_VM_BAKE="pkg ...": the img layer also installs these packages (a baked
# image; its own img/KEY), as tests/bench/vm-slurm-boot.sh --baked does with the
# Slurm custom-data's packages.
# Pruning: after a build, each layer keeps its newest N entries (by last
# use; --keep N or HPCINIT_VM_KEEP, default 2; the ones this run uses
# always stay) and the rest is deleted and printed ("image: pruned ...").
# An image in use is never deleted: tests/vm/cluster.sh holds a shared
# flock on its img/KEY/done while its VMs run, and an image whose disk a
# process has open (a qemu of any run) is kept too.  Builds and pruning
# hold $CACHE/.lock, so two runs never build or prune at once.
# Needs root, debootstrap, mkfs.ext4 (e2fsprogs >= 1.43 for -d) and the
# Debian archive (the one apt-get uses) for the base layer only.
set -Eeuo pipefail

SRC=$(cd "$(dirname "$0")/../.." && pwd)
CACHE=${HPCINIT_VM_CACHE:-/var/cache/hpcinit-vm}
MIRROR=${HPCINIT_VM_MIRROR:-http://deb.debian.org/debian}
SUITE=bookworm
DDIR=
PREPARE=
KEEPN=${HPCINIT_VM_KEEP:-2}
while [ $# -gt 0 ]; do
	case $1 in
	--suite) SUITE=$2; shift 2 ;;
	--debs) DDIR=$(readlink -f "$2"); shift 2 ;;
	--keep) KEEPN=$2; shift 2 ;;
	--prepare) PREPARE=1; shift ;;
	*) echo "usage: $0 [--suite bookworm|trixie] [--debs DIR] [--keep N] [--prepare]" >&2; exit 2 ;;
	esac
done
case $SUITE in
bookworm) LSFX= ;;
trixie) LSFX=-trixie ;;
*) echo "image: --suite: bookworm or trixie, not '$SUITE'" >&2; exit 2 ;;
esac
[ -z "$DDIR" ] || [ -z "$PREPARE" ] || { echo "image: --prepare builds no image: --debs has no use there" >&2; exit 2; }
[ -z "$DDIR" ] || [ "$SUITE" = bookworm ] ||
	{ echo "image: --debs: the .debs of Debian 12 do not install on $SUITE (it builds its own)" >&2; exit 2; }
case $KEEPN in ''|*[!0-9]*|0) echo "image: --keep wants a number >= 1" >&2; exit 2 ;; esac

log() { echo "image: $*" >&2; }
die() { echo "image: FAIL: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "run as root (debootstrap, chroot, mounts)"
for t in debootstrap mkfs.ext4 unshare chroot sha256sum; do
	command -v "$t" >/dev/null || die "$t not found (Debian: debootstrap e2fsprogs util-linux coreutils)"
done

# What the VMs need besides hpcinit: a kernel (with rdma_rxe, nfs, 9p),
# systemd, sshd, the kernel NFS server and client, verbs (rxe provider),
# Open MPI (Debian's build uses UCX), cloud-init, clustershell.
BASE_INCLUDE=systemd,systemd-sysv,dbus,iproute2,udev,kmod
BASE_PKGS=(
	linux-image-amd64 initramfs-tools
	libpam-systemd netbase procps iputils-ping less ca-certificates locales
	openssh-server openssh-client
	nfs-kernel-server nfs-common
	rdma-core ibverbs-utils ibverbs-providers rdmacm-utils perftest
	openmpi-bin libopenmpi3 libucx0
	cloud-init clustershell python3
	libyaml-0-2 libssh-4 libnfs13 libibverbs1 librdmacm1
)
# Debian 13's names for the libraries whose package name changed (new
# sonames: libopenmpi40 is Open MPI 5, libnfs14; the 64-bit time_t rename:
# librdmacm1t64); UCX 1.18 keeps libucx0.
if [ "$SUITE" = trixie ]; then
	BASE_PKGS=("${BASE_PKGS[@]/#libopenmpi3/libopenmpi40}")
	BASE_PKGS=("${BASE_PKGS[@]/#libnfs13/libnfs14}")
	BASE_PKGS=("${BASE_PKGS[@]/#librdmacm1/librdmacm1t64}")
	# e2fsprogs left the required set in Debian 13 (debootstrap's minbase no
	# longer has it); cloud-init's resizefs runs resize2fs at every boot and,
	# since cloud-init 24, a module that fails fails its stage's unit.
	BASE_PKGS+=(e2fsprogs)
fi

# The base layer: runs with the target directory $1, in a private mount namespace.
base_build() {
	local R=$1
	debootstrap --variant=minbase --include="$BASE_INCLUDE" "$SUITE" "$R" "$MIRROR" >&2
	mount -t proc proc "$R/proc"
	mount --rbind /sys "$R/sys"
	mount --rbind /dev "$R/dev"
	cp /etc/resolv.conf "$R/etc/resolv.conf"
	printf 'deb %s %s main\n' "$MIRROR" "$SUITE" > "$R/etc/apt/sources.list"
	chroot "$R" env DEBIAN_FRONTEND=noninteractive apt-get update -q >&2
	chroot "$R" env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -q --no-install-recommends "${BASE_PKGS[@]}" >&2
	# The custom-data's packages: (nfs-common, nfs-kernel-server) are
	# installed by cloud-init at first boot, from the image's local
	# repository, as on Azure: keep their .debs, remove the packages
	# (their dependencies stay installed).
	mkdir -p "$R/srv/hpcinit-base-debs"
	cp "$R"/var/cache/apt/archives/nfs-common_*.deb "$R"/var/cache/apt/archives/nfs-kernel-server_*.deb \
		"$R/srv/hpcinit-base-debs/"
	chroot "$R" env DEBIAN_FRONTEND=noninteractive dpkg --purge nfs-kernel-server nfs-common >&2
	chroot "$R" apt-get clean
	rm -rf "$R"/var/lib/apt/lists/*_dists_* "$R/etc/resolv.conf"
	: > "$R/etc/resolv.conf"
}

# The last layer: $1 the merged root (base below, writable overlay above),
# $2 the directory of the .debs.  Installs hpcinit as a user would and configures the image
# for the test bed (no internet, console on ttyS0, NoCloud seeds).
final_build() {
	local R=$1 debs=$2
	mount -t proc proc "$R/proc"
	mount --rbind /sys "$R/sys"
	mount --rbind /dev "$R/dev"
	# The local apt repository: the .deb and the packages the custom-data
	# names, so cloud-init's "packages:" works without the internet.
	local repo=$R/srv/hpcinit-repo
	mkdir -p "$repo"
	cp "$debs"/hpcinit*.deb "$R"/srv/hpcinit-base-debs/*.deb "$repo/"
	# A newer kernel metapackage, for the kernel hold check: apt-get
	# upgrade must keep it back once hpcinit has held the kernel.
	local k=$R/tmp/kernel-next
	mkdir -p "$k/DEBIAN"
	cat > "$k/DEBIAN/control" <<-'EOF'
	Package: linux-image-amd64
	Version: 99.0
	Architecture: amd64
	Maintainer: hpcinit test bed <root@localhost>
	Description: newer kernel metapackage offered by the test bed (empty)
	EOF
	dpkg-deb --build "$k" "$repo/linux-image-amd64_99.0_amd64.deb" >&2
	rm -rf "$k"
	(cd "$repo" && dpkg-scanpackages --multiversion . /dev/null > Packages 2>/dev/null)
	# hpcinit's dependencies come from the Debian archive, as for a user;
	# then the VMs (no internet) see only the local repository.
	cp /etc/resolv.conf "$R/etc/resolv.conf"
	printf 'deb [trusted=yes] file:/srv/hpcinit-repo ./\ndeb %s %s main\n' "$MIRROR" "$SUITE" > "$R/etc/apt/sources.list"
	chroot "$R" env DEBIAN_FRONTEND=noninteractive apt-get update -q >&2
	chroot "$R" env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -q --no-install-recommends $(cd "$debs" && ls hpcinit*.deb | grep -v -- -dbgsym_ | sed 's/_.*//') >&2
	# The Slurm custom-data's packages (conf/cloud-init/slurm-*.yaml, cluster.sh
	# --slurm) and the directory's (conf/cloud-init/parts/directory-*.yaml,
	# cluster.sh --directory; libnss-extrausers for its per-VM UID): only
	# their .debs and their dependencies' go into the local repository;
	# cloud-init installs them at first boot, as on Azure.
	chroot "$R" apt-get clean
	chroot "$R" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --download-only \
		slurmd slurmctld slurm-client munge libpmix-dev \
		slapd ldap-utils sssd-ldap libnss-sss libpam-sss libnss-extrausers >&2
	cp "$R"/var/cache/apt/archives/*.deb "$repo/"
	chroot "$R" apt-get clean
	(cd "$repo" && dpkg-scanpackages --multiversion . /dev/null > Packages 2>/dev/null)
	: > "$R/etc/resolv.conf"
	echo 'deb [trusted=yes] file:/srv/hpcinit-repo ./' > "$R/etc/apt/sources.list"
	rm -rf "$R"/var/lib/apt/lists/*_dists_*
	chroot "$R" env DEBIAN_FRONTEND=noninteractive apt-get update -q >&2
	# HPCINIT_VM_BAKE: packages baked into the image, as a real deployment bakes what its
	# custom-data names (conf/cloud-init/image-build.yaml; tests/bench/vm-slurm-boot.sh
	# --baked): installed from the local repository, enabled as Debian enables them but
	# slurmd.service (hpcinit starts a compute's slurmd; on a head, which has a slurm.conf,
	# the package's unit failed at boot: "Unable to determine this slurmd's NodeName"),
	# and no munge key of the image's own (its postinst made one; hpcinit installs the cluster's).
	if [ -n "${HPCINIT_VM_BAKE:-}" ]; then
		# shellcheck disable=SC2086 # a list of package names
		chroot "$R" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
			$HPCINIT_VM_BAKE >&2
		chroot "$R" apt-get clean
		chroot "$R" systemctl disable slurmd.service >&2 2>/dev/null || true
		rm -f "$R/etc/munge/munge.key"
	fi
	chroot "$R" hpcinit --version >&2
	# A getty on the serial console hangs up the line (later console output is lost).
	# e2scrub_reap takes minutes under emulation; the timers only add load.
	local u
	for u in serial-getty@ttyS0.service e2scrub_reap.service e2scrub_all.timer \
		apt-daily.timer apt-daily-upgrade.timer man-db.timer fstrim.timer; do
		ln -sf /dev/null "$R/etc/systemd/system/$u"
	done
	# No network renderer in minbase (addresses come from a bootcmd in the
	# custom-data); seeds only from the kernel command line.
	# Two of cloud-init's modules cost minutes of the first boot under
	# emulation and nothing on the test bed's path (measured in a VM,
	# cloud-init analyze blame): locale (cloud-init 22.4 runs locale-gen for
	# en_US.UTF-8 at every first boot: 218 s) and grub-dpkg (debconf for a
	# boot loader these VMs do not have, qemu -kernel: 15 s).  C.UTF-8 needs
	# no locale-gen; the module still writes /etc/default/locale.
	cat > "$R/etc/cloud/cloud.cfg.d/90-hpcinit-testbed.cfg" <<-'EOF'
	datasource_list: [NoCloud, None]
	network: {config: disabled}
	locale: C.UTF-8
	grub_dpkg: {enabled: false}
	EOF
	printf '/dev/vda / ext4 rw,errors=remount-ro 0 1\n' > "$R/etc/fstab"
	echo localhost > "$R/etc/hostname"
	# Root logs in with keys only (the test harness's key comes in the seed).
	passwd -R "$R" -l root >/dev/null 2>&1 || true
	rm -f "$R"/etc/ssh/ssh_host_*
	# sshd makes its host keys at first boot (as on a cloud image).
	chroot "$R" systemctl enable ssh >/dev/null 2>&1 || true
	mkdir -p "$R/etc/systemd/system/ssh.service.d"
	cat > "$R/etc/systemd/system/ssh.service.d/hostkeys.conf" <<-'EOF'
	[Service]
	ExecStartPre=/usr/bin/ssh-keygen -A
	EOF
	# The test bed's own channel (not part of hpcinit): a 9p share per VM
	# (tag hpcvm) mounted before cloud-init looks for its NoCloud seed in
	# /hpcvm/seed/, and an agent that runs the harness's commands from
	# /hpcvm/cmd/ and writes their output to /hpcvm/out/ (tests/vm/agent.sh,
	# read from the share, so changing it does not rebuild the image).
	mkdir -p "$R/hpcvm"
	cat > "$R/etc/systemd/system/hpcvm-share.service" <<-'EOF'
	[Unit]
	Description=Test bed: mount the 9p share hpcvm on /hpcvm
	DefaultDependencies=no
	After=systemd-remount-fs.service
	Before=cloud-init-local.service sysinit.target
	ConditionKernelCommandLine=hpcvm.name
	[Service]
	Type=oneshot
	RemainAfterExit=yes
	ExecStart=/bin/mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 hpcvm /hpcvm
	[Install]
	WantedBy=sysinit.target
	EOF
	cat > "$R/etc/systemd/system/hpcvm-agent.service" <<-'EOF'
	[Unit]
	Description=Test bed: run the harness's commands (tests/vm/agent.sh)
	DefaultDependencies=no
	Requires=hpcvm-share.service
	After=hpcvm-share.service
	Conflicts=shutdown.target
	Before=shutdown.target
	[Service]
	ExecStart=/bin/bash /hpcvm/agent.sh
	Environment=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
	Restart=on-failure
	[Install]
	WantedBy=sysinit.target
	EOF
	chroot "$R" systemctl enable hpcvm-share.service hpcvm-agent.service >&2
	chroot "$R" apt-get clean
	truncate -s 0 "$R/etc/machine-id"
}

# The deb layer of a release other than bookworm: $1 the merged root
# (base below, writable overlay above), $2 a copy of the tree's tracked
# files with packaging/debian as debian/, $3 the output directory.
deb_build() {
	local R=$1 tree=$2 out=$3
	mount -t proc proc "$R/proc"
	mount --rbind /sys "$R/sys"
	mount --rbind /dev "$R/dev"
	cp /etc/resolv.conf "$R/etc/resolv.conf"
	printf 'deb %s %s main\n' "$MIRROR" "$SUITE" > "$R/etc/apt/sources.list"
	mkdir -p "$R/build"
	cp -a "$tree" "$R/build/src"
	chroot "$R" env DEBIAN_FRONTEND=noninteractive apt-get update -q >&2
	chroot "$R" env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -q --no-install-recommends build-essential fakeroot >&2
	chroot "$R" env DEBIAN_FRONTEND=noninteractive \
		apt-get build-dep -y -q --no-install-recommends /build/src >&2
	chroot "$R" sh -c 'cd /build/src && DEB_BUILD_OPTIONS="parallel=$(nproc)" dpkg-buildpackage -us -uc -b' \
		> "$out/dpkg-buildpackage.log" 2>&1 || { tail -60 "$out/dpkg-buildpackage.log" >&2; return 1; }
	cp "$R"/build/hpcinit*.deb "$out/"
}

hash_of() { sha256sum | cut -c1-16; }

mkdir -p "$CACHE"
exec 9> "$CACHE/.lock"
flock 9

# prune LAYER KEEPKEY: keep KEEPKEY and the newest KEEPN-1 others of
# $CACHE/LAYER (by the mtime of their "done", touched at every use), delete
# the rest unless in use; unfinished entries go when older than an hour.
in_use() {
	local d=$1
	# a run of tests/vm/cluster.sh holds a shared lock on done
	[ -e "$d/done" ] && ! flock -xn "$d/done" true && return 0
	# a qemu (of this or an older harness) has its disk open
	[ -n "$(find /proc/[0-9]*/fd -lname "$d/*" -print -quit 2>/dev/null)" ]
}
prune() {
	local layer=$1 keep=$2 d k n=1 size
	[ -d "$CACHE/$layer" ] || return 0
	while read -r _ d; do
		k=$(basename "$d")
		if [ "$k" = "$keep" ]; then continue; fi
		if [ -e "$d/done" ] && [ $n -lt "$KEEPN" ]; then n=$((n + 1)); continue; fi
		if [ ! -e "$d/done" ] && [ -n "$(find "$d" -maxdepth 0 -mmin -60)" ]; then continue; fi
		if in_use "$d"; then log "kept $layer/$k: in use"; continue; fi
		size=$(du -sh "$d" 2>/dev/null | cut -f1)
		rm -rf "$d"
		log "pruned $layer/$k ($size)"
	done < <(for d in "$CACHE/$layer"/*; do
			[ -d "$d" ] || continue
			printf '%s %s\n' "$(stat -c %Y "$d/done" 2>/dev/null || echo 0)" "$d"
		done | sort -rn)
}

BKEY=$( { printf '%s\n' "$SUITE" "$MIRROR" "$BASE_INCLUDE" "${BASE_PKGS[@]}"; declare -f base_build; } | hash_of)
BASE=$CACHE/base$LSFX/$BKEY
if [ -f "$BASE/done" ]; then
	log "base $BKEY: cached"
	touch "$BASE/done"
else
	log "base $BKEY: debootstrap $SUITE + ${#BASE_PKGS[@]} packages (a few minutes)"
	t0=$(date +%s)
	rm -rf "$BASE"
	mkdir -p "$BASE"
	export -f base_build
	export SUITE MIRROR BASE_INCLUDE
	BASE_PKGS_S="${BASE_PKGS[*]}" unshare --mount --propagation private -- bash -c \
		'set -Eeuo pipefail; read -ra BASE_PKGS <<< "$BASE_PKGS_S"; base_build "$1"' _ "$BASE/root" ||
		die "base build failed"
	touch "$BASE/done"
	log "base $BKEY: built in $(($(date +%s) - t0)) s"
fi
# --prepare: Debian 12's deb layer is the packaging stage's .debs (--debs) or build-deb.sh's.
[ -z "$PREPARE" ] || [ "$SUITE" != bookworm ] || { log "prepared: base $BKEY"; exit 0; }

if [ -z "$DDIR" ] && [ "$SUITE" != bookworm ]; then
	SKEY=$( { cd "$SRC" && { git ls-files -z 2>/dev/null || find . -path ./build -prune -o -type f -print0; } |
		sort -z | xargs -0 sha256sum 2>/dev/null; echo "$BKEY"; declare -f deb_build; } | hash_of)
	DDIR=$CACHE/deb$LSFX/$SKEY
	if ! ls "$DDIR"/hpcinit_*.deb >/dev/null 2>&1; then
		log "deb $SKEY: dpkg-buildpackage inside $SUITE (base $BKEY)"
		t0=$(date +%s)
		rm -rf "$DDIR.tmp"
		mkdir -p "$DDIR.tmp/ovl/upper" "$DDIR.tmp/ovl/work" "$DDIR.tmp/ovl/root" "$DDIR.tmp/tree" "$DDIR.tmp/out"
		if git -C "$SRC" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
			(cd "$SRC" && git ls-files -z | xargs -0 tar -cf - --no-recursion) | tar -C "$DDIR.tmp/tree" -xf -
		else
			(cd "$SRC" && tar -cf - --exclude='./build*' --exclude=./debian .) | tar -C "$DDIR.tmp/tree" -xf -
		fi
		rm -rf "$DDIR.tmp/tree/debian"
		cp -a "$SRC/packaging/debian" "$DDIR.tmp/tree/debian"
		export -f deb_build
		export SUITE MIRROR
		unshare --mount --propagation private -- bash -c '
			set -Eeuo pipefail
			mount -t overlay overlay -o "lowerdir=$1/root,upperdir=$2/ovl/upper,workdir=$2/ovl/work" "$2/ovl/root"
			deb_build "$2/ovl/root" "$2/tree" "$2/out"
		' _ "$BASE" "$DDIR.tmp" || die "the $SUITE .deb build failed"
		rm -rf "$DDIR"
		mv "$DDIR.tmp/out" "$DDIR"
		rm -rf "$DDIR.tmp"
		log "deb $SKEY: built in $(($(date +%s) - t0)) s: $(dpkg-deb -f "$DDIR"/hpcinit_*.deb Depends)"
	else
		log "deb $SKEY: cached"
	fi
	touch "$DDIR/done"
elif [ -z "$DDIR" ]; then
	SKEY=$(cd "$SRC" && { git ls-files -z 2>/dev/null || find . -path ./build -prune -o -type f -print0; } |
		sort -z | xargs -0 sha256sum 2>/dev/null | hash_of)
	DDIR=$CACHE/deb/$SKEY
	if ! ls "$DDIR"/hpcinit_*.deb >/dev/null 2>&1; then
		log "deb $SKEY: packaging/build-deb.sh (builds, lintian, install test)"
		t0=$(date +%s)
		rm -rf "$DDIR.tmp"
		bash "$SRC/packaging/build-deb.sh" "$DDIR.tmp" >&2 || die "packaging/build-deb.sh failed"
		rm -rf "$DDIR"
		mv "$DDIR.tmp" "$DDIR"
		log "deb $SKEY: built in $(($(date +%s) - t0)) s"
	else
		log "deb $SKEY: cached"
	fi
	touch "$DDIR/done"
fi
ls "$DDIR"/hpcinit_*.deb >/dev/null 2>&1 || die "no hpcinit_*.deb in $DDIR"
[ -z "$PREPARE" ] || { log "prepared: base $BKEY, deb $(basename "$DDIR")"; exit 0; }

FKEY=$( { echo "$BKEY"; cat "$DDIR"/hpcinit*.deb | sha256sum; declare -f final_build; echo "${HPCINIT_VM_BAKE:-}"; } | hash_of)
IMG=$CACHE/img$LSFX/$FKEY
if [ -f "$IMG/done" ]; then
	log "image $FKEY: cached"
	touch "$IMG/done"
else
	log "image $FKEY: base $BKEY + $(cd "$DDIR" && echo hpcinit*.deb)"
	t0=$(date +%s)
	rm -rf "$IMG"
	mkdir -p "$IMG/ovl/upper" "$IMG/ovl/work" "$IMG/ovl/root"
	export -f final_build
	export SUITE MIRROR HPCINIT_VM_BAKE
	unshare --mount --propagation private -- bash -c '
		set -Eeuo pipefail
		mount -t overlay overlay -o "lowerdir=$1/root,upperdir=$2/upper,workdir=$2/work" "$2/root"
		final_build "$2/root" "$3"
		umount -R "$2/root/proc" "$2/root/sys" "$2/root/dev" 2>/dev/null || umount -l "$2/root/dev" "$2/root/sys" || true
		umount "$2/root/proc" 2>/dev/null || true
		cp -L "$2"/root/boot/vmlinuz-* "$4/vmlinuz"
		cp -L "$2"/root/boot/initrd.img-* "$4/initrd.img"
		cp -a "$2/root/srv/hpcinit-repo" "$4/repo"
		truncate -s 4G "$4/disk.img.tmp"
		mkfs.ext4 -q -F -L hpcinit-vm -d "$2/root" "$4/disk.img.tmp"
	' _ "$BASE" "$IMG/ovl" "$DDIR" "$IMG" || die "image build failed"
	rm -rf "$IMG/ovl"
	mv "$IMG/disk.img.tmp" "$IMG/disk.img"
	(cd "$DDIR" && ls hpcinit*.deb) > "$IMG/debs"
	touch "$IMG/done"
	log "image $FKEY: built in $(($(date +%s) - t0)) s"
fi

prune "img$LSFX" "$FKEY"
prune "deb$LSFX" "$(basename "$DDIR")"
prune "base$LSFX" "$BKEY"
log "cache $CACHE: $(du -sh "$CACHE" 2>/dev/null | cut -f1) (keeps $KEEPN per layer)"
echo "$IMG"
