// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Scheduler hooks, aggregated in the kernel: counters and log2 histograms live in per-CPU maps
// that user space reads on its tick; nothing goes through a ring buffer.
//
// The same object follows the target tree (run, attach) exactly, from the kernel's own per-task
// accounting: a fork hook marks each child of a member (task storage, tree.bpf.h); a task's
// final figures are captured at its very last switch (state TASK_DEAD: nothing runs after it,
// so even the exit path's own work, unmapping its memory, is in); a task iterator reports the
// live members' figures when user space reads it. Tree totals are then exited + live, each
// task counted once: never a process and also the children it reaped.
//
// The system-wide hooks exist twice: as tp_btf (cheap, typed) and as raw_tp (the fallback where
// BTF programs cannot attach). User space turns off autoload for the pair it does not use. A
// tree needs the typed programs (task storage), so a raw_tp object never follows one.
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "scheduler.h"
#include "tree.bpf.h"
#include "switch_chain.bpf.h"  // switch_clock, written here; the chain this switch program ends in
#include "core_fixes.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define PF_KTHREAD 0x00200000

// Set before load: the system-wide figures (the scheduler source). Off when the object is
// loaded only to follow a tree: the hooks then do the tree's work alone.
const volatile bool count_system = true;
// Every task's figures (the top lists): the last switch of any task is captured per process, and
// the all_tasks iterator reads the live ones.
const volatile bool track_all = false;
// Run-queue latency per cgroup (user space adds deeper cgroups to their ancestor at this depth of
// the v2 hierarchy; 0: off). Typed programs only (cgroup storage).
const volatile __u32 cgroup_depth = 0;

// --cgroup, and run's own cgroup: every task in this cgroup (or below it) belongs to the tree,
// also one moved in later (the task iterator marks it on its next pass); 0: no such rule.
const volatile __u64 tree_cgroup_id = 0;
// Its level in the v2 hierarchy, learned from the kernel's own cgroups (-1 until then): at the
// first walk of the cgroup, or the first cgroup at or below it seen (its first
// PM_MAX_CGROUP_LEVELS ancestors looked at). User space cannot know it inside a cgroup
// namespace, whose paths start below the hierarchy's root.
__s32 tree_cgroup_level = -1;
#define PM_MAX_CGROUP_LEVELS 32
// The tree's cgroup, read as a whole (tree_scope_tasks below). Written by the programs, read and
// zeroed by user space (.bss).
__u32 scope_count = 0;     // records the pass wrote (user space zeroes it before each)
__u32 scope_overflow = 0;  // the pass found more tasks than scope_tasks holds
__u32 scope_left = 0;      // a member is outside the cgroup (moved, or forked into another): for good
__u32 scope_joined = 0;    // a task not marked moved in (user space clears it)

// While user space seeds the tree: the iterator marks every task of these processes, and the
// fork hook the children they fork meanwhile. Written by user space (.bss).
bool seeding = false;
__u64 seeded_tasks = 0;      // tasks the seeding passes marked
__u64 seeded_processes = 0;  // of which thread-group leaders
__u64 seed_failures = 0;     // tasks they could not mark (no memory)

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, PM_MAX_SEEDS);
  __type(key, __u32);
  __type(value, __u8);
} seeds SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct pm_sched_counters);
} counters SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct pm_tree_stats);
} tree SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, PM_MAX_EXITED);
  __type(key, struct pm_process_key);
  __type(value, struct pm_exited);
} exited SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_CGRP_STORAGE);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, int);
  __type(value, struct pm_cgroup_slot);
} cgroup_slots SEC(".maps");

// Per CPU, the cgroup whose slot the last switch-in there looked up: switch-ins in a row are
// mostly of one cgroup's tasks (a server's threads, a pipeline), whose slot then costs two loads
// and a compare instead of a storage lookup (140 ns of a switch's 345 on a ping-pong here). By
// id, never reused, so a new cgroup where a removed one was is not taken for it.
struct pm_slot_seen {
  __u64 cgroup_id;
  __u32 slot;
};
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct pm_slot_seen);
} slot_seen SEC(".maps");

// Slot -> cgroup id, written once when a cgroup gets its slot (slot 0 unused).
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, PM_MAX_CGROUP_SLOTS + 1);
  __type(key, __u32);
  __type(value, __u64);
} slot_cgroups SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, PM_MAX_CGROUP_SLOTS + 1);
  __type(key, __u32);
  __type(value, struct pm_cgroup_runq);
} cgroup_runq SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct pm_top_losses);
} top_losses SEC(".maps");

__u32 next_slot = 0;  // slots handed out so far

static __always_inline struct pm_tree_stats *tree_stats(void) {
  __u32 zero = 0;
  return bpf_map_lookup_elem(&tree, &zero);
}

// A task's blocked time as of `at`, a moment it was not running since its last switch out (a
// sleep's end, or the switch out itself): its life then minus the time it ran and the time it
// waited for a CPU, both final from its switch out to its next switch in (the kernel adds the
// wait to run_delay only at the switch in, after sched_switch fires).
static __always_inline __u64 blocked_at(struct task_struct *t, __u64 at) {
  __u64 life = at > t->start_time ? at - t->start_time : 0;
  __u64 busy = t->se.sum_exec_runtime + (bpf_core_field_exists(t->sched_info) ? t->sched_info.run_delay : 0);
  return life > busy ? life - busy : 0;
}

static __always_inline __u64 max_u64(__u64 a, __u64 b) { return a > b ? a : b; }

// The task's own figures now (tree.h). Blocked time (blocked_at) is exact while it sleeps and at
// its death. While it is runnable its on-CPU time and wait lag (the kernel adds them up at ticks
// and switches): one waiting for a CPU was blocked until its run-queue stamp (`queued`, 0: none),
// one running until its last switch in, where its switch program kept the figure.
static __always_inline void task_figures(struct task_struct *t, struct pm_member *m, __u64 now, bool dead,
                                         __u64 queued, __u64 *fig) {
  fig[PM_T_ON_CPU_NS] = t->se.sum_exec_runtime;
  fig[PM_T_USER_NS] = t->utime;
  fig[PM_T_SYSTEM_NS] = t->stime;
  fig[PM_T_RUNQ_NS] = bpf_core_field_exists(t->sched_info) ? t->sched_info.run_delay : 0;
  if (dead || !t->on_rq) fig[PM_T_BLOCKED_NS] = max_u64(blocked_at(t, now), m->blocked_ns);
  else if (queued && !t->on_cpu) fig[PM_T_BLOCKED_NS] = max_u64(blocked_at(t, queued), m->blocked_ns);
  else fig[PM_T_BLOCKED_NS] = m->blocked_ns;
  fig[PM_T_VOLUNTARY] = t->nvcsw;
  fig[PM_T_INVOLUNTARY] = t->nivcsw;
  fig[PM_T_MINOR_FAULTS] = t->min_flt;
  fig[PM_T_MAJOR_FAULTS] = t->maj_flt;
  fig[PM_T_MIGRATIONS] = t->se.nr_migrations;
  if (bpf_core_field_exists(t->ioac)) {
    fig[PM_T_RCHAR] = t->ioac.rchar;
    fig[PM_T_WCHAR] = t->ioac.wchar;
    fig[PM_T_SYSCR] = t->ioac.syscr;
    fig[PM_T_SYSCW] = t->ioac.syscw;
  } else {
    fig[PM_T_RCHAR] = fig[PM_T_WCHAR] = fig[PM_T_SYSCR] = fig[PM_T_SYSCW] = 0;
  }
  if (bpf_core_field_exists(t->ioac.read_bytes)) {
    fig[PM_T_READ_BYTES] = t->ioac.read_bytes;
    fig[PM_T_WRITE_BYTES] = t->ioac.write_bytes;
    fig[PM_T_CANCELLED_WRITE_BYTES] = t->ioac.cancelled_write_bytes;
  } else {
    fig[PM_T_READ_BYTES] = fig[PM_T_WRITE_BYTES] = fig[PM_T_CANCELLED_WRITE_BYTES] = 0;
  }
}

// The process's largest RSS before its current mm (an exec'd program, exited threads), pages.
static __always_inline __u64 signal_maxrss(struct task_struct *t) { return t->signal->maxrss; }

// A member's last switch: its figures are final. Marked captured first, so a concurrent read of
// the live members never sees it as live once its figures are in `exited`.
static __always_inline void capture(struct task_struct *t) {
  struct pm_member *m = member_of(t);
  if (!m || m->captured) return;
  m->captured = 1;
  struct pm_tree_stats *s = tree_stats();
  if (!s) return;
  __u64 fig[PM_T_FIGURES];
  task_figures(t, m, bpf_ktime_get_ns(), true, 0, fig);
  for (int i = 0; i < PM_T_FIGURES; ++i) s->totals.exited[i] += fig[i];
  s->totals.tasks_exited++;
  __u64 peak = signal_maxrss(t);
  if (peak > s->totals.exited_peak_rss_pages) s->totals.exited_peak_rss_pages = peak;
}

static __always_inline struct pm_top_losses *top_losses_here(void) {
  __u32 zero = 0;
  return bpf_map_lookup_elem(&top_losses, &zero);
}

// Any task's last switch (track_all): its final figures go to its process's entry, which user
// space takes once an interval. Threads of one process may die at once on several CPUs: atomic
// adds.
static __always_inline void capture_any(struct task_struct *t) {
  struct pm_process_key key = {.tgid = t->tgid, .leader_start_ns = t->group_leader->start_time};
  struct pm_exited *e = bpf_map_lookup_elem(&exited, &key);
  if (!e) {
    struct pm_exited zero = {};
    bpf_map_update_elem(&exited, &key, &zero, BPF_NOEXIST);
    e = bpf_map_lookup_elem(&exited, &key);
    if (!e) {
      struct pm_top_losses *l = top_losses_here();
      if (l) l->exits_dropped++;
      return;
    }
  }
  struct pm_member none = {};
  __u64 fig[PM_T_FIGURES];
  task_figures(t, &none, bpf_ktime_get_ns(), true, 0, fig);
  for (int i = 0; i < PM_T_FIGURES; ++i) __sync_fetch_and_add(&e->fig[i], fig[i]);
  __sync_fetch_and_add(&e->tasks, 1);
  __u64 peak = signal_maxrss(t);
  if (peak > e->peak_rss_pages) e->peak_rss_pages = peak;
  e->cgroup_id = t->cgroups->dfl_cgrp->kn->id;
  if (t->pid == t->tgid) {
    e->leader_dead = 1;
    __builtin_memcpy(e->comm, t->comm, sizeof e->comm);
  } else if (!e->comm[0]) {
    __builtin_memcpy(e->comm, t->group_leader->comm, sizeof e->comm);
  }
}

// The slot of a task's own cgroup, given on the first switch-in seen of that cgroup. User space
// adds a deeper cgroup's histogram to its ancestor at the depth limit.
static __always_inline __u32 cgroup_slot_of(struct task_struct *t) {
  struct cgroup *cg = t->cgroups->dfl_cgrp;
  if (!cg) return 0;
  __u32 zero = 0;
  struct pm_slot_seen *seen = bpf_map_lookup_elem(&slot_seen, &zero);
  __u64 id = cg->kn->id;
  if (seen && seen->slot && seen->cgroup_id == id) return seen->slot;
  __u32 slot;
  struct pm_cgroup_slot *s = bpf_cgrp_storage_get(&cgroup_slots, cg, 0, 0);
  if (s) {
    slot = s->slot;
  } else {
    s = bpf_cgrp_storage_get(&cgroup_slots, cg, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
    if (!s) return 0;
    slot = __sync_fetch_and_add(&next_slot, 1) + 1;
    if (slot > PM_MAX_CGROUP_SLOTS) {
      s->slot = 0;
      return 0;
    }
    bpf_map_update_elem(&slot_cgroups, &slot, &id, BPF_ANY);
    s->slot = slot;
  }
  if (seen) {
    seen->cgroup_id = id;
    seen->slot = slot;
  }
  return slot;
}

// Run-queue waits are timed on the wall clock (bpf_ktime_get_ns), as runqlat does: a task is
// stamped when it becomes runnable (sched_wakeup, sched_wakeup_new, or switched out still
// runnable) and its wait is the time to its next switch-in. The scheduler's own stamp
// (sched_info.last_queued against rq->clock, what run_delay adds up) cannot serve: a wakeup
// that preempts makes the next switch skip its clock update (rq_clock_skip_update), so the
// woken task's wait reads ~0 however long it was. Typed programs keep the stamp in an array
// indexed by the pid's low bits (a lookup the verifier inlines: no helper call, which a task
// storage lookup is, at 20-110 ns per event on a slow VM); raw_tp ones in a pid-keyed LRU hash.
// A stamp names its task (pid and start time), so a slot taken by another task, or a stamp
// left by a task that ran unseen, is never read as this task's wait.
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, PM_RUNQ_STAMP_SLOTS);  // 1 where the raw_tp programs load (user space)
  __type(key, __u32);
  __type(value, struct pm_runq_stamp);
} runq_stamps SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, PM_RAW_STAMPS);  // a token size where the typed programs load (user space)
  __type(key, __u32);
  __type(value, __u64);
} raw_runq_stamps SEC(".maps");

// The slot of a pid in the arrays indexed by its low bits (runq_stamps, top_names).
static __always_inline __u32 pid_slot(__u32 pid) { return pid & (PM_RUNQ_STAMP_SLOTS - 1); }

static __always_inline struct pm_runq_stamp *stamp_slot(__u32 pid) {
  __u32 slot = pid_slot(pid);
  return bpf_map_lookup_elem(&runq_stamps, &slot);
}

// The stamp of a task that became runnable now. The idle task (pid 0) never waits.
static __always_inline void stamp_runnable(struct task_struct *p, bool typed, __u64 now) {
  if (typed) {
    __u32 pid = p->pid;
    if (pid == 0) return;
    struct pm_runq_stamp *s = stamp_slot(pid);
    if (!s) return;
    if (s->at && s->pid != pid) {  // another runnable task's stamp, not yet taken: its wait is lost
      __u32 zero = 0;
      struct pm_sched_counters *c = bpf_map_lookup_elem(&counters, &zero);
      if (c) c->runq_lost++;
    }
    s->pid = pid;
    s->start = (__u32)p->start_time;
    s->at = now;
  } else {
    __u32 pid = BPF_CORE_READ(p, pid);
    if (pid == 0) return;
    bpf_map_update_elem(&raw_runq_stamps, &pid, &now, BPF_ANY);
  }
}

// The stamp of a task switched in, taken (0: none, it did not wait on a run queue since).
static __always_inline __u64 take_stamp(struct task_struct *p, bool typed) {
  if (typed) {
    __u32 pid = p->pid;
    if (pid == 0) return 0;  // (a load, not a lookup: switches to idle are frequent)
    struct pm_runq_stamp *s = stamp_slot(pid);
    if (!s || !s->at || s->pid != pid || s->start != (__u32)p->start_time) return 0;
    __u64 at = s->at;
    s->at = 0;
    s->taken = at;
    return at;
  }
  __u32 pid = BPF_CORE_READ(p, pid);
  __u64 *ts = bpf_map_lookup_elem(&raw_runq_stamps, &pid);
  if (!ts) return 0;
  __u64 at = *ts;
  *ts = 0;
  return at;
}

// When a task became runnable, by its stamp not yet taken (0: none, or not its own).
static __always_inline __u64 queued_since(struct task_struct *t) {
  __u32 pid = t->pid;
  struct pm_runq_stamp *s = stamp_slot(pid);
  if (!s || s->pid != pid || s->start != (__u32)t->start_time) return 0;
  return s->at;
}

// sched_wakeup (and sched_wakeup_new): the task is runnable from here. It follows each
// sched_waking one to one (also for a task woken before it left the CPU), later only where
// the wakeup is handed to the task's CPU (an IPI), which runqlat does not count as waiting.
// A tree member's wakeup is counted here (not a new task's: `woken`); its blocked time is kept
// at its switch in, from this stamp (on_switch), so no program runs at sched_waking.
static __always_inline int on_wakeup(struct task_struct *p, bool typed, bool woken) {
  __u32 zero = 0;
  if (count_system) {
    struct pm_sched_counters *c = bpf_map_lookup_elem(&counters, &zero);
    if (c) c->wakeups++;
  }
  if (typed && woken && track_tree && member_of(p)) {
    struct pm_tree_stats *s = tree_stats();
    if (s) s->wakeups++;
  }
  stamp_runnable(p, typed, bpf_ktime_get_ns());
  return 0;
}

// The hottest path of the kernel, kept to reading fields, adding to counters and at most two
// stamp lookups (task storage: no hash) and one clock read. `prev_state`: prev's state as it
// was switched out; the switch is involuntary when prev was preempted or still runnable, as
// the kernel counts nivcsw, and prev then waits on the run queue from now.
static __always_inline int on_switch(struct task_struct *prev, struct task_struct *next, bool preempt, long prev_state,
                                     bool typed) {
  __u32 zero = 0;
  struct pm_sched_counters *c = 0;
  bool runnable = preempt || prev_state == 0;
  if (count_system) {
    c = bpf_map_lookup_elem(&counters, &zero);
    if (c) {
      c->switches++;
      if (runnable) c->involuntary++;
      else c->voluntary++;
    }
  }
  if (prev_state & PM_TASK_DEAD) {
    if (track_tree) capture(prev);
    if (track_all) capture_any(prev);
  }

  __u64 queued = take_stamp(next, typed);  // the idle task has none
  if (!runnable && !queued) return 0;
  __u64 now = bpf_ktime_get_ns();
  if (typed) {
    struct pm_switch_clock *sc = bpf_map_lookup_elem(&switch_clock, &zero);
    if (sc) {
      sc->now = now;
      sc->pid = prev->pid;
      sc->switches = prev->nvcsw + prev->nivcsw;
    }
  }
  if (runnable) stamp_runnable(prev, typed, now);
  if (!queued || now < queued) return 0;
  __u64 wait = now - queued;
  __u32 b = PM_BUCKET(log2_bucket(in_hist_units(wait)), PM_RUNQ_BUCKETS);
  if (c) {
    c->runq_ns += wait;
    c->runq_hist[b]++;
  }
  struct pm_member *m = track_tree ? member_of(next) : 0;
  if (m) {
    struct pm_tree_stats *s = tree_stats();
    if (s) {
      s->runq_ns += wait;
      s->runq_hist[b]++;
    }
    // Not running since `queued`: blocked until then (blocked_at), for the figures read while
    // it runs (task_figures). Kept here rather than at its wakeup, where no program runs.
    __u64 blocked = blocked_at(next, queued);
    if (blocked > m->blocked_ns) m->blocked_ns = blocked;
  }
  if (cgroup_depth) {
    __u32 slot = cgroup_slot_of(next);
    if (slot == 0) {
      struct pm_top_losses *l = top_losses_here();
      if (l) l->cgroups_over++;
      return 0;
    }
    struct pm_cgroup_runq *r = bpf_map_lookup_elem(&cgroup_runq, &slot);
    if (r) {
      r->count++;
      r->ns += wait;
      r->hist[b]++;
    }
  }
  return 0;
}

// A child of a member is a member; while seeding, so is a child of a seed process.
// Whether a cgroup is the tree's cgroup or below it: its ancestor at the tree cgroup's level is
// it. Until that level is known, each of its ancestors is looked at (cgroup ids are unique).
static __always_inline bool ancestor_is_tree(struct cgroup *cg, int level) {
  struct cgroup *anc = 0;
  bpf_core_read(&anc, sizeof(anc), &cg->ancestors[level]);
  return anc && BPF_CORE_READ(anc, kn, id) == tree_cgroup_id;
}
static __always_inline bool cgroup_in_tree(struct cgroup *cg) {
  if (!cg) return false;
  int depth = cg->level, known = tree_cgroup_level;
  if (known >= 0) return depth >= known && ancestor_is_tree(cg, known);
  for (int level = 0; level < PM_MAX_CGROUP_LEVELS; level++) {
    if (level > depth) break;
    if (ancestor_is_tree(cg, level)) {
      tree_cgroup_level = level;
      return true;
    }
  }
  return false;
}
static __always_inline bool in_tree_cgroup(struct task_struct *t) { return cgroup_in_tree(t->cgroups->dfl_cgrp); }

static __always_inline int on_fork(struct task_struct *parent, struct task_struct *child) {
  if (!track_tree) return 0;
  if (!member_of(parent)) {
    __u32 tgid = parent->tgid;
    bool seed = seeding && bpf_map_lookup_elem(&seeds, &tgid);
    // Forked straight into the tree's cgroup by a process outside the tree (clone3's
    // CLONE_INTO_CGROUP: a service manager starting a service there): a member from birth.
    if (!seed && !(tree_cgroup_id && in_tree_cgroup(child))) return 0;
  }
  struct pm_tree_stats *s = tree_stats();
  if (!s) return 0;
  if (!bpf_task_storage_get(&members, child, 0, BPF_LOCAL_STORAGE_GET_F_CREATE)) {
    s->totals.not_followed++;
    return 0;
  }
  if (child->pid == child->tgid) s->totals.processes_seen++;
  else s->totals.threads_seen++;
  // Forked straight into another cgroup (clone3's CLONE_INTO_CGROUP): a member outside it.
  if (tree_cgroup_id && !in_tree_cgroup(child)) scope_left = 1;
  return 0;
}

// The other sources' switch programs (the off-CPU stacks', the probes'), where they are loaded:
// this one ends in them, by tail calls, so a switch runs one program (switch_chain.bpf.h).
SEC("tp_btf/sched_switch")
int BPF_PROG(btf_switch, bool preempt, struct task_struct *prev, struct task_struct *next) {
  on_switch(prev, next, preempt, TASK_STATE_BTF(prev), true);
  switch_chain_from(ctx, PM_CHAIN_OFF_CPU);  // (none there: passed over)
  return 0;
}
SEC("tp_btf/sched_wakeup")
int BPF_PROG(btf_wakeup, struct task_struct *p) { return on_wakeup(p, true, true); }
SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(btf_wakeup_new, struct task_struct *p) { return on_wakeup(p, true, false); }
SEC("tp_btf/sched_process_fork")
int BPF_PROG(tree_fork, struct task_struct *parent, struct task_struct *child) { return on_fork(parent, child); }

SEC("raw_tp/sched_switch")
int BPF_PROG(raw_switch, bool preempt, struct task_struct *prev, struct task_struct *next) {
  return on_switch(prev, next, preempt, task_state(prev), false);
}
SEC("raw_tp/sched_wakeup")
int BPF_PROG(raw_wakeup, struct task_struct *p) { return on_wakeup(p, false, true); }
SEC("raw_tp/sched_wakeup_new")
int BPF_PROG(raw_wakeup_new, struct task_struct *p) { return on_wakeup(p, false, false); }

// A live task's record: its figures, its process's memory, who and where it is. Typed pointers
// all the way: direct loads, no helper calls (this runs for every member on every tree pass).
static __always_inline void member_record(struct pm_task *rec, struct task_struct *t, struct pm_member *m) {
  rec->pid = t->pid;
  rec->tgid = t->tgid;
  rec->ppid = t->real_parent->tgid;
  rec->start_ns = t->start_time;
  task_figures(t, m, bpf_ktime_get_ns(), false, queued_since(t), rec->fig);
  struct mm_struct *mm = t->mm;
  __u64 peak = signal_maxrss(t);
  if (mm) {
    rec->flags |= PM_TASK_HAS_MM;
    // Summed over the CPUs for one task of each process (user space reads the leader's, or the
    // first with an mm once the leader's is gone): threads need not pay for it again.
    struct task_struct *leader = t->group_leader;
    mm_counters(mm, rec->rss_pages, t == leader || !leader->mm);
    __u64 rss = rec->rss_pages[PM_RSS_FILE] + rec->rss_pages[PM_RSS_ANON] + rec->rss_pages[PM_RSS_SHMEM];
    rec->vm_pages = mm->total_vm;
    __u64 hiwater = mm->hiwater_rss;
    if (hiwater > peak) peak = hiwater;
    if (rss > peak) peak = rss;
  }
  rec->peak_rss_pages = peak;
  rec->cgroup_id = t->cgroups->dfl_cgrp->kn->id;
  rec->leader_start_ns = t->group_leader->start_time;
  __builtin_memcpy(rec->comm, t->comm, sizeof rec->comm);
}

// The live members, one pm_task record each, when user space reads the iterator. While seeding
// it marks the seed processes' tasks instead, and writes nothing.
SEC("iter/task")
int tree_tasks(struct bpf_iter__task *ctx) {
  struct task_struct *t = ctx->task;
  if (!t || !track_tree) return 0;
  if (seeding) {
    __u32 tgid = t->tgid;
    if (!bpf_map_lookup_elem(&seeds, &tgid) || member_of(t)) return 0;
    if (!bpf_task_storage_get(&members, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE)) {
      seed_failures++;
      return 0;
    }
    seeded_tasks++;
    if (t->pid == t->tgid) seeded_processes++;
    return 0;
  }
  if (t->flags & PF_KTHREAD) return 0;  // never a member: no storage lookup
  struct pm_member *m = member_of(t);
  if (!m && tree_cgroup_id && in_tree_cgroup(t)) {
    m = bpf_task_storage_get(&members, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
    if (m) {
      seeded_tasks++;
      if (t->pid == t->tgid) seeded_processes++;
    } else {
      seed_failures++;
    }
  }
  if (!m || m->captured) return 0;
  struct pm_task rec = {};
  member_record(&rec, t, m);
  bpf_seq_write(ctx->meta->seq, &rec, sizeof rec);
  return 0;
}

// A tree in a cgroup of its own (run's, --cgroup's): its live members are that cgroup's tasks
// and its descendants', so a pass walks those (the cgroup iterator, and each cgroup's task list)
// instead of every task of the host, and looks a task's mark up only when it is runnable (its
// blocked time is as of its last wakeup); a sleeping one's is its life less its running and
// waiting. The task list leaves out a task once it is exiting (cgroup_exit), before its last
// switch captures it: no task is both live and captured. Records go to an mmapable array (one
// cgroup's tasks may be more than a seq_file buffer holds). While a member is outside the
// cgroup (scope_left), or a task joined it unmarked (scope_joined), user space reads the task
// iterator instead, which finds and marks them.
//
// An array of task records that user space maps and sizes before load.
#define PM_TASK_RECORDS(name)          \
  struct {                             \
    __uint(type, BPF_MAP_TYPE_ARRAY);  \
    __uint(map_flags, BPF_F_MMAPABLE); \
    __uint(max_entries, 1);            \
    __type(key, __u32);                \
    __type(value, struct pm_task);     \
  } name SEC(".maps")
PM_TASK_RECORDS(scope_tasks);

extern int bpf_iter_css_task_new(struct bpf_iter_css_task *it, struct cgroup_subsys_state *css,
                                 unsigned int flags) __weak __ksym;
extern struct task_struct *bpf_iter_css_task_next(struct bpf_iter_css_task *it) __weak __ksym;
extern void bpf_iter_css_task_destroy(struct bpf_iter_css_task *it) __weak __ksym;

// One task's record for the cgroup walk below: a global function, which the verifier checks once
// on its own (a trusted task, two records that may be null), not once for every state the walk's
// loop reaches — inlined there, it cost half a second of every start. (Kernels before 6.8 cannot
// take a task as an argument of a global function: there the object loads without the walk.)
#define pm_arg_trusted __attribute__((btf_decl_tag("arg:trusted")))
__noinline int scope_record(struct pm_task *rec, struct task_struct *t pm_arg_trusted, struct pm_member *m) {
  if (!rec || !t || !m) return 0;
  __builtin_memset(rec, 0, sizeof *rec);
  member_record(rec, t, m);
  return 1;
}

SEC("iter/cgroup")
int tree_scope_tasks(struct bpf_iter__cgroup *ctx) {
  struct cgroup *cg = ctx->cgroup;
  if (!cg || !track_tree) return 0;
  // The walk begins at the tree's cgroup itself: its level, once and for all.
  if (tree_cgroup_level < 0 && cg->kn->id == tree_cgroup_id) tree_cgroup_level = cg->level;
  struct bpf_iter_css_task it;
  struct task_struct *t;
  bpf_iter_css_task_new(&it, &cg->self, 0);
  while ((t = bpf_iter_css_task_next(&it))) {
    // (exit_state: a kernel that unlinks a task from its cgroup later than cgroup_exit still
    // never shows one that may be captured.)
    if ((t->flags & PF_KTHREAD) || t->exit_state) continue;
    __u32 i = scope_count;
    struct pm_task *rec = bpf_map_lookup_elem(&scope_tasks, &i);
    if (!rec) {
      scope_overflow = 1;
      break;
    }
    struct pm_member none = {};
    struct pm_member *m = t->on_rq ? member_of(t) : 0;
    scope_record(rec, t, m ? m : &none);
    scope_count = i + 1;
  }
  bpf_iter_css_task_destroy(&it);
  return 0;
}

// A task moved between cgroups: a member out of the tree's cgroup, or an unmarked task into it,
// means the cgroup's task list is not the tree until the task iterator has been read again.
SEC("tp_btf/cgroup_attach_task")
int BPF_PROG(tree_cgroup_attach, struct cgroup *dst, const char *path, struct task_struct *task, bool threadgroup) {
  // Moves in the v2 hierarchy only (id 0; v1 hierarchies beside it have ids of their own).
  if (!track_tree || !tree_cgroup_id || dst->root->hierarchy_id != 0) return 0;
  bool member = member_of(task) != 0;
  bool inside = cgroup_in_tree(dst);
  if (member && !inside) scope_left = 1;
  if (!member && inside) scope_joined = 1;
  return 0;
}

// A task's cgroup and its parent's tgid as a pass of the top lists last read them. Reading them
// takes four dependent loads (css_set, cgroup, kernfs node; the parent's task) that miss the
// cache a second after the last pass: with a thousand cgroups, half of the pass's time. A slot
// (indexed by the pid's low bits, as the run-queue stamps) names its task by pid, start time and
// address (a thread that execs takes its leader's pid and start time, not its cgroup). It holds
// while no task has changed cgroup since (cgroup_moves, bumped by the attach hook once a move is
// done: the only way a live task's v2 cgroup changes) and the parent is the same task
// (reparenting sets a parent that was alive beside the old one, so never at its address).
// Another task's slot, a move anywhere, a new parent: read again.
struct pm_task_names {
  __u64 start_ns;
  __u64 cgroup_id;
  __u64 moves;   // cgroup_moves when read
  __u64 task;    // the task's address, and its parent's: compared, never given out
  __u64 parent;
  __u32 pid;
  __u32 ppid;
};
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, PM_RUNQ_STAMP_SLOTS);  // 1 where the raw_tp programs load (user space)
  __type(key, __u32);
  __type(value, struct pm_task_names);
} top_names SEC(".maps");

__u64 cgroup_moves = 0;

extern int bpf_iter_task_new(struct bpf_iter_task *it, struct task_struct *task, unsigned int flags) __weak __ksym;
extern struct task_struct *bpf_iter_task_next(struct bpf_iter_task *it) __weak __ksym;
extern void bpf_iter_task_destroy(struct bpf_iter_task *it) __weak __ksym;

// One live task's record for the top lists; false for a task not to list. A zombie (or one on
// its way out) has had, or is about to have, its last switch: its figures are the exited map's,
// never also a live task's. Blocked time needs the task's wakeups to be exact while it is
// runnable (tree members have them); here a runnable task says so, and user space keeps its
// blocked time from when it last slept.
static __always_inline bool top_fill(struct pm_task *rec, struct task_struct *t) {
  if (t->exit_state || t->pid == 0) return false;  // (pid 0: the idle task the walk below starts at)
  rec->pid = t->pid;
  rec->tgid = t->tgid;
  rec->start_ns = t->start_time;
  __u64 moves = cgroup_moves;  // before the cgroup is read: a move after this one is the next pass's
  __u64 parent = (__u64)t->real_parent;
  __u32 slot = pid_slot(rec->pid);
  struct pm_task_names *n = bpf_map_lookup_elem(&top_names, &slot);
  if (n && n->pid == rec->pid && n->start_ns == rec->start_ns && n->task == (__u64)t && n->moves == moves &&
      n->parent == parent) {
    rec->ppid = n->ppid;
    rec->cgroup_id = n->cgroup_id;
  } else {
    rec->ppid = t->real_parent->tgid;
    rec->cgroup_id = t->cgroups->dfl_cgrp->kn->id;
    if (n) {
      n->pid = rec->pid;
      n->start_ns = rec->start_ns;
      n->task = (__u64)t;
      n->moves = moves;
      n->parent = parent;
      n->ppid = rec->ppid;
      n->cgroup_id = rec->cgroup_id;
    }
  }
  struct pm_member none = {};
  task_figures(t, &none, bpf_ktime_get_ns(), false, 0, rec->fig);
  if (t->on_rq) rec->flags |= PM_TASK_RUNNABLE;
  if (t->flags & PF_KTHREAD) rec->flags |= PM_TASK_KTHREAD;
  struct mm_struct *mm = t->mm;
  if (mm && !(t->flags & PF_KTHREAD)) {
    rec->flags |= PM_TASK_HAS_MM;
    struct task_struct *leader = t->group_leader;
    mm_counters(mm, rec->rss_pages, t == leader || !leader->mm);
    rec->vm_pages = mm->total_vm;
    rec->peak_rss_pages = mm->hiwater_rss;
  }
  rec->leader_start_ns = t->group_leader->start_time;
  __builtin_memcpy(rec->comm, t->comm, sizeof rec->comm);
  return true;
}

// Every live task, for the top lists (track_all), through the task iterator: the kernel looks
// each task up by pid (a pid lookup and a reference per task). Where the walk below loads, it is
// read only when the walk's array is too small.
SEC("iter/task")
int top_tasks(struct bpf_iter__task *ctx) {
  struct task_struct *t = ctx->task;
  if (!t || !track_all) return 0;
  struct pm_task rec = {};
  if (top_fill(&rec, t)) bpf_seq_write(ctx->meta->seq, &rec, sizeof rec);
  return 0;
}

// The same records in one program run, written to an array user space maps: the kernel's task
// list followed from task to task, no pid lookup, no reference, no seq_file. Run as a cgroup
// iterator over the root cgroup alone (it runs once). The records are in the task list's order
// (processes by age, each one's threads together); user space sorts them by tid.
__u32 top_count = 0;     // records the walk wrote (user space zeroes it before each)
__u32 top_overflow = 0;  // the walk found more tasks than top_records holds
PM_TASK_RECORDS(top_records);

// A global function, verified once on its own rather than for every state of the walk's loop
// (as scope_record; inlined, the walk added 0.1-0.2 s to every start). The walk's tasks are RCU
// pointers, not trusted ones: the argument is untrusted (field loads only, each one guarded),
// which kernels take since arg:untrusted (6.18 here; before, the object loads without the walk).
// Taking a reference to pass a trusted task cost 7 % more of the monitor's CPU with 10,000
// processes, half of what the walk saves.
__noinline int top_record(struct pm_task *rec, struct task_struct *t __attribute__((btf_decl_tag("arg:untrusted")))) {
  if (!rec || !t) return 0;
  __builtin_memset(rec, 0, sizeof *rec);
  return top_fill(rec, t);
}

SEC("iter/cgroup")
int top_walk(struct bpf_iter__cgroup *ctx) {
  if (!ctx->cgroup || !track_all) return 0;
  struct bpf_iter_task it;
  struct task_struct *t;
  bpf_iter_task_new(&it, 0, BPF_TASK_ITER_ALL_THREADS);
  while ((t = bpf_iter_task_next(&it))) {
    __u32 i = top_count;
    struct pm_task *rec = bpf_map_lookup_elem(&top_records, &i);
    if (!rec) {
      top_overflow = 1;
      break;
    }
    if (top_record(rec, t)) top_count = i + 1;
  }
  bpf_iter_task_destroy(&it);
  return 0;
}

// A process moved to another v2 cgroup (track_all): what its live threads had run until then
// ran in the cgroup it left, which is where the kernel's own cpu.stat put it. The hook fires
// once the move is done, once for the whole thread group; user space splits the process's
// interval at each move. (Separate from tree_cgroup_attach: that one keeps a tree's scope.)
struct {
  __uint(type, BPF_MAP_TYPE_QUEUE);
  __uint(max_entries, PM_MAX_MOVES);
  __type(value, struct pm_move);
} moves SEC(".maps");

SEC("tp_btf/cgroup_attach_task")
int BPF_PROG(top_cgroup_attach, struct cgroup *dst, const char *path, struct task_struct *task, bool threadgroup) {
  if (!track_all || dst->root->hierarchy_id != 0) return 0;
  __sync_fetch_and_add(&cgroup_moves, 1);
  struct pm_move m = {};
  m.tgid = task->tgid;
  m.leader_start_ns = task->group_leader->start_time;
  m.cgroup_id = dst->kn->id;
  m.at_ns = bpf_ktime_get_ns();
  if (threadgroup) {
    struct bpf_iter_task it;
    struct task_struct *t;
    bpf_iter_task_new(&it, task, BPF_TASK_ITER_PROC_THREADS);
    while ((t = bpf_iter_task_next(&it))) {
      if (!t->exit_state) m.on_cpu_ns += t->se.sum_exec_runtime;
    }
    bpf_iter_task_destroy(&it);
  } else {
    m.on_cpu_ns = task->se.sum_exec_runtime;
  }
  if (bpf_map_push_elem(&moves, &m, 0) != 0) {
    struct pm_top_losses *l = top_losses_here();
    if (l) l->moves_dropped++;
  }
  return 0;
}

// A v2 cgroup made (track_all): its path as the kernel writes it, for user space to name a cgroup
// that was removed before a walk of the hierarchy saw it (its processes' last figures name it).
struct {
  __uint(type, BPF_MAP_TYPE_QUEUE);
  __uint(max_entries, PM_MAX_MADE_CGROUPS);
  __type(value, struct pm_cgroup_made);
} made_cgroups SEC(".maps");

SEC("tp_btf/cgroup_mkdir")
int BPF_PROG(top_cgroup_mkdir, struct cgroup *cgrp, const char *path) {
  if (!track_all || cgrp->root->hierarchy_id != 0) return 0;
  struct pm_cgroup_made m = {};
  m.cgroup_id = cgrp->kn->id;
  bpf_probe_read_kernel_str(m.path, sizeof m.path, path);
  bpf_map_push_elem(&made_cgroups, &m, 0);  // full: a walk names it, as before
  return 0;
}
