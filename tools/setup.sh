#!/bin/bash
# Install what hpcinit needs to build and test on Debian 12, then build it.
# Used by .ci/run and demo.sh; safe to re-run.  Set HPCINIT_SKIP_APT=1 to skip apt.
set -euo pipefail
cd "$(dirname "$0")/.."
PKGS=(
	build-essential autoconf automake libtool libtool-bin pkg-config
	libyaml-dev libssh-dev libibverbs-dev librdmacm-dev libssl-dev libnfs-dev
	libcurl4-openssl-dev libjson-c-dev etcd-server etcd-client
	libopenmpi-dev openmpi-bin mpich libmpich-dev
	openssh-server openssh-client git systemd iproute2 util-linux procps kmod python3 python3-yaml
	nfs-ganesha nfs-ganesha-vfs libnfs-utils rpcbind nfs-common
	cloud-init clustershell sshpass nmap
	valgrind clang libclang-rt-14-dev man-db bc strace faketime inotify-tools
	dpkg-dev apt-utils debhelper devscripts lintian fakeroot rpm
	dnf zypper createrepo-c
	rdma-core ibverbs-utils ucx-utils
	qemu-system-x86 qemu-utils debootstrap
	slurm-wlm slurmctld slurmd slurm-client munge
	prometheus-node-exporter curl
	libnss-extrausers
)
if [ "${HPCINIT_SKIP_APT:-0}" != 1 ]; then
	export DEBIAN_FRONTEND=noninteractive
	missing=()
	for p in "${PKGS[@]}"; do
		dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' || missing+=("$p")
	done
	if [ ${#missing[@]} -gt 0 ]; then
		echo "setup: installing ${missing[*]}"
		apt-get update -q
		apt-get install -y -q --no-install-recommends "${missing[@]}"
	fi
fi
if [ ! -x configure ] || [ configure.ac -nt configure ]; then
	autoreconf -fi
fi
# Out-of-tree build in build/ (the tree stays clean for sanitizer builds and distcheck).
mkdir -p build
if [ ! -f build/Makefile ] || [ configure -nt build/Makefile ]; then
	(cd build && ../configure --enable-werror --enable-test-backends --prefix=/usr --sysconfdir=/etc --localstatedir=/var)
fi
make -C build -j"$(nproc)"
