# SPDX-License-Identifier: Apache-2.0
# What the bench scripts share (sourced).

# Stops a background tool (bpftrace, a monitor) and waits for it: SIGINT, then SIGKILL if it has
# not ended within 10 s. bpftrace can miss a SIGINT that lands between its check of the flag and
# its epoll_wait, and then waits for an event that never comes.
stop() {
  kill -INT "$1" 2> /dev/null || true
  for _ in $(seq 100); do kill -0 "$1" 2> /dev/null || break; sleep 0.1; done
  kill -KILL "$1" 2> /dev/null || true
  wait "$1" 2> /dev/null || true
}
