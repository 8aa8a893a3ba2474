#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Baseline (a) of tests/bench/converge.sh: what the Azure documentation page
# "Set up a Linux RDMA cluster to run MPI applications" pointed to for
# passwordless SSH, the community script tanewill/utils user_authentication.sh
# (commit 3b8add0), re-typed step for step for the benchmark:
#
#   1. a new RSA key pair for the head (any existing key is overwritten),
#      "Host * / StrictHostKeyChecking no" in ~/.ssh/config, chmod 400;
#   2. discovery: nmap -sn over the /24, field 5 of each "scan report" line;
#   3. one password SSH session per address to ask its hostname (nodenames.txt);
#   4. for each node, in turn: copy nodenames.txt, create .ssh, make a new key
#      pair there (overwriting), rewrite its ssh config (4 sessions), append the
#      head's public key, pull the node's public key back; then, for every
#      address, "mkdir -p .ssh" and append that key: 9 + 2N sessions per node.
#
# All in all 2N^2 + 10N sequential password (sshpass) SSH sessions, host-key
# checking off.  Its flaws (password on the command line and sent to whatever
# answers on the subnet, checking off for every host, keys rotated, no error
# checks) are kept on purpose: this is the thing measured, not a recommendation.
# The original also runs "chown azureuser:azureuser /home/azureuser/.ssh/config"
# with the user name hard-coded; left out (there is no azureuser here).
#
# Usage, as USER in its home directory on the head node:
#   baseline-user-auth.sh USER PASSWORD PREFIX     (PREFIX: first three octets, e.g. 10.1.3)
USER=$1
PASS=$2
IPPRE=$3

mkdir -p .ssh
echo y | ssh-keygen -f .ssh/id_rsa -t rsa -N '' > /dev/null
echo 'Host *' >> .ssh/config
echo 'StrictHostKeyChecking no' >> .ssh/config
chmod 400 .ssh/config

nmap -sn "$IPPRE.*" | grep "$IPPRE." | awk '{print $5}' > nodeips.txt
for NAME in $(cat nodeips.txt); do
	sshpass -p "$PASS" ssh -o ConnectTimeout=2 "$USER@$NAME" hostname >> nodenames.txt
done

for NAME in $(cat nodenames.txt); do
	sshpass -p "$PASS" scp -o ConnectTimeout=2 nodenames.txt "$USER@$NAME:"
	sshpass -p "$PASS" ssh -o ConnectTimeout=2 "$USER@$NAME" 'mkdir .ssh && chmod 700 .ssh'
	sshpass -p "$PASS" ssh -o ConnectTimeout=2 "$USER@$NAME" "echo y | ssh-keygen -f .ssh/id_rsa -t rsa -N '' > /dev/null"
	sshpass -p "$PASS" ssh -o ConnectTimeout=2 "$USER@$NAME" 'touch .ssh/config'
	sshpass -p "$PASS" ssh -o ConnectTimeout=2 "$USER@$NAME" 'echo "Host *" > .ssh/config'
	sshpass -p "$PASS" ssh -o ConnectTimeout=2 "$USER@$NAME" 'echo StrictHostKeyChecking no >> .ssh/config'
	sshpass -p "$PASS" ssh -o ConnectTimeout=2 "$USER@$NAME" 'chmod 400 .ssh/config'
	cat .ssh/id_rsa.pub | sshpass -p "$PASS" ssh -o ConnectTimeout=2 "$USER@$NAME" 'cat >> .ssh/authorized_keys'
	sshpass -p "$PASS" scp -o ConnectTimeout=2 "$USER@$NAME:.ssh/id_rsa.pub" .ssh/sub_node.pub
	for SUBNODE in $(cat nodeips.txt); do
		sshpass -p "$PASS" ssh -o ConnectTimeout=2 "$USER@$SUBNODE" 'mkdir -p .ssh'
		cat .ssh/sub_node.pub | sshpass -p "$PASS" ssh -o ConnectTimeout=2 "$USER@$SUBNODE" 'cat >> .ssh/authorized_keys'
	done
done
