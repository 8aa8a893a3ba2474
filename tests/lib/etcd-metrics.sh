# SPDX-License-Identifier: MIT
# What etcd's members say they were asked, from their /metrics (the gRPC calls the JSON
# gateway makes for each request): tests that count a node's requests source this.
#
# etcd_grpc_started METHOD RUN URL...: the calls of METHOD (Range, Put, LeaseKeepAlive, ...)
# the members at the client URLs have started so far, summed.  RUN is a command or function
# that runs its arguments where the URLs answer (a network namespace's "ip netns exec").
# A member that does not answer counts 0: the difference of two counts then fails the test.
etcd_grpc_started() {
	local method=$1 run=$2 url s=0
	shift 2
	for url in "$@"; do
		s=$((s + $("$run" curl -s "$url/metrics" |
			awk -v m="grpc_method=\"$method\"" 'index($0, "grpc_server_started_total{") == 1 && index($0, m) {s += $2}
				END {printf "%d", s}')))
	done
	echo "$s"
}
