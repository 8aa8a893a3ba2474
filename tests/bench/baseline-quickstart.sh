#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Baseline (b) of tests/bench/converge.sh: the "Quick MPI Cluster Setup on
# Azure" method.  The VMs were created with one key pair (az vm create
# --generate-ssh-keys puts its public key in every node's authorized_keys)
# and the private key was copied to the head; then, on the head:
#
#   for i in ...; do ssh-keyscan node$i; done > ~/.ssh/known_hosts
#   clush -w node[...] -c ~/.ssh/id_rsa ~/.ssh/known_hosts
#
# Here the public key is copied along (as the brief asks) and the node list is
# written as a hostfile and copied too, so every node ends with a hostfile
# like hpcinit's (the quick start itself types "mpirun --host a,b,c,d").
# One private key is then shared by every node, and the known_hosts pins
# whatever answered the scan (trust on first use, by name only).
#
# Usage, as the user on the head node: baseline-quickstart.sh NODE...
set -u
for n in "$@"; do
	ssh-keyscan "$n"
done > ~/.ssh/known_hosts 2> /dev/null
printf '%s\n' "$@" > ~/hostfile
nodes=$(nodeset -f "$@")
clush -w "$nodes" -c ~/.ssh/id_rsa ~/.ssh/id_rsa.pub ~/.ssh/known_hosts
clush -w "$nodes" -c ~/hostfile
