// SPDX-License-Identifier: Apache-2.0
// What a kernel source's BPF object is loaded for: one set of options for every object (the
// scheduler's, block I/O's, the probes'); an object takes the fields it can use. Written with
// designated initializers: SchedObject::load({.track_tree = true, .hist_unit_ns = 1000}).
#pragma once

#include <cstdint>

namespace pm {

struct BpfLoadOptions {
  bool track_tree = false;       // follow the target tree (run, attach)
  bool track_all = false;        // objects that can: every task (the top lists)
  uint32_t cgroup_depth = 0;     // objects that can: run-queue latency per cgroup at this depth
  uint64_t tree_cgroup_id = 0;   // objects that can: the tree is this cgroup's tasks (--cgroup)
  int members_fd = -1;           // the tree's membership map, when another object owns it
  uint64_t hist_unit_ns = 1000;  // latency histograms: bucket i below 2^i of these
  bool count_system = true;      // objects that can: the system-wide figures too
  // Objects whose sched_switch program runs after the scheduler object's: its clock at each
  // switch, and the chain of programs it ends in (bpf/switch_chain.bpf.h); -1: none.
  int switch_clock_fd = -1;
  int switch_chain_fd = -1;
};

}  // namespace pm
