// SPDX-License-Identifier: Apache-2.0
// A top record of known rows, shared by the table and view tests.
#pragma once

#include <memory>
#include <string>

#include "core/top.h"

namespace pm::test {


inline TopProcess proc(int pid, const char* comm, const char* cgroup, double cpu, double runq, double rss = 1 << 20) {
  TopProcess p;
  p.pid = pid;
  p.comm = comm;
  p.cgroup = cgroup;
  p.f[TaskFig::kUser] = cpu * 0.75;
  p.f[TaskFig::kSystem] = cpu * 0.25;
  p.f[TaskFig::kRunq] = runq;
  p.f.rss_bytes = rss;
  return p;
}

inline std::shared_ptr<TopRecord> record() {
  auto r = std::make_shared<TopRecord>();
  r->seconds = 1;
  r->processes = {proc(10, "burner", "/a", 0.98, 0.01), proc(20, "waiter", "/b", 0.30, 0.65, 8 << 20),
                  proc(30, "sleeper", "/a", 0.0, 0.0), proc(40, "bash", "/", 0.02, 0.0)};
  TopProcess t1 = proc(20, "waiter", "/b", 0.2, 0.4), t2 = proc(20, "waiter-2", "/b", 0.1, 0.25);
  t1.tid = 20;
  t2.tid = 21;
  TopProcess t3 = proc(10, "burner", "/a", 0.98, 0.01);
  t3.tid = 10;
  r->threads = {t1, t2, t3};
  for (const char* path : {"/a", "/b", "/"}) {
    TopCgroup c;
    c.path = path;
    for (const TopProcess& p : r->processes) {
      if (p.cgroup == path) {
        c.f.add(p.f);
        ++c.processes;
      }
    }
    if (std::string(path) == "/a") c.cpu_stat_s = 0.97;
    r->cgroups.push_back(c);
  }
  return r;
}

}  // namespace pm::test
