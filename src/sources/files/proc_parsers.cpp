// SPDX-License-Identifier: Apache-2.0
#include "sources/files/proc_parsers.h"

#include <array>
#include <cstddef>
#include <limits>
#include <optional>

#include "core/text.h"
#include "sources/files/key_value.h"

namespace pm::procfs {
namespace {


// Fixed-position fields of /proc/PID/stat counted after the ")" that closes comm: index 0 is
// state (field 3 in proc(5)), so rss (field 24) is index 21.
enum StatIdx : size_t {
  kState = 0,
  kPpid = 1,
  kFlags = 6,
  kMinflt = 7,
  kCminflt = 8,
  kMajflt = 9,
  kCmajflt = 10,
  kUtime = 11,
  kStime = 12,
  kCutime = 13,
  kCstime = 14,
  kNice = 16,
  kNumThreads = 17,
  kStarttime = 19,
  kVsize = 20,
  kRss = 21,
  kNeeded = 22,
};

}  // namespace

Result<PidStat> parse_pid_stat(std::string_view text) {
  constexpr std::string_view kFile = "/proc/PID/stat";
  // comm is whatever the process named itself, so it may contain ' ', '(' and ')'. The kernel does
  // not escape it; only the last ')' reliably ends it.
  size_t open = text.find('(');
  size_t close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return parse_error(kFile, "no '(comm)'");
  }
  PidStat st;
  std::optional<int64_t> pid = parse_i64(trim(text.substr(0, open)));
  if (!pid || *pid <= 0 || *pid > std::numeric_limits<int>::max()) {
    return parse_error(kFile, "bad pid '" + std::string(trim(text.substr(0, open))) + "'");
  }
  st.pid = static_cast<int>(*pid);
  st.comm = std::string(text.substr(open + 1, close - open - 1));

  std::array<std::string_view, kNeeded> f{};
  std::string_view rest = text.substr(close + 1);
  for (size_t i = 0; i < kNeeded; ++i) {
    f[i] = next_field(rest);
    if (f[i].empty()) {
      return parse_error(kFile, "fewer than " + std::to_string(static_cast<size_t>(kNeeded)) + " fields after comm");
    }
  }
  if (f[kState].size() != 1) return parse_error(kFile, "bad state '" + std::string(f[kState]) + "'");
  st.state = f[kState][0];

  bool ok = true;
  auto u64 = [&](size_t i) {
    std::optional<uint64_t> v = parse_u64(f[i]);
    ok = ok && v.has_value();
    return v.value_or(0);
  };
  auto i64 = [&](size_t i) {
    std::optional<int64_t> v = parse_i64(f[i]);
    ok = ok && v.has_value();
    return v.value_or(0);
  };
  int64_t ppid = i64(kPpid), nice = i64(kNice);
  st.flags = u64(kFlags);
  st.minflt = u64(kMinflt);
  st.cminflt = u64(kCminflt);
  st.majflt = u64(kMajflt);
  st.cmajflt = u64(kCmajflt);
  st.utime = u64(kUtime);
  st.stime = u64(kStime);
  st.cutime = i64(kCutime);
  st.cstime = i64(kCstime);
  st.num_threads = i64(kNumThreads);
  st.starttime = u64(kStarttime);
  st.vsize = u64(kVsize);
  st.rss_pages = i64(kRss);
  if (!ok || ppid < 0 || ppid > std::numeric_limits<int>::max() || nice < -20 || nice > 19) {
    return parse_error(kFile, "a field after comm is not a number in range");
  }
  st.ppid = static_cast<int>(ppid);
  st.nice = static_cast<int>(nice);
  return st;
}

Result<PidStatus> parse_pid_status(std::string_view text) {
  constexpr std::string_view kFile = "/proc/PID/status";
  // Vm*/Rss* lines are absent for kernel threads and zombies, so only the ids are required.
  static constexpr std::array<KeyField<PidStatus>, 9> kFields{{
      {"VmSize", &PidStatus::vm_size, false},
      {"VmRSS", &PidStatus::vm_rss, false},
      {"VmHWM", &PidStatus::vm_hwm, false},
      {"RssAnon", &PidStatus::rss_anon, false},
      {"RssFile", &PidStatus::rss_file, false},
      {"RssShmem", &PidStatus::rss_shmem, false},
      {"VmSwap", &PidStatus::vm_swap, false},
      {"voluntary_ctxt_switches", &PidStatus::voluntary_ctxt_switches, false},
      {"nonvoluntary_ctxt_switches", &PidStatus::nonvoluntary_ctxt_switches, false},
  }};
  PidStatus st;
  if (Status s = parse_key_values(text, {kFile}, kFields, st); !s) return s.error();

  // Name is text and the ids are signed ints, so they do not fit the u64 table above.
  bool have_name = false, have_tgid = false, have_pid = false, have_ppid = false;
  std::optional<Error> err;
  for_each_line(text, [&](std::string_view line) {
    std::string_view key, rest;
    if (err || !split_key(line, ':', key, rest)) return;
    if (key == "Name") {
      // The kernel separates with one tab; stripping only that keeps a name's own spaces.
      if (!rest.empty() && rest.front() == '\t') rest.remove_prefix(1);
      st.name = std::string(rest);
      have_name = true;
      return;
    }
    if (key == "Uid") {  // real, effective, saved, filesystem: the real one
      std::string_view ids = rest;
      std::optional<uint64_t> v = parse_u64(next_field(ids));
      if (!v || *v > std::numeric_limits<uint32_t>::max()) {
        err = bad_value(kFile, key, trim(rest));
        return;
      }
      st.uid = static_cast<uint32_t>(*v);
      return;
    }
    int* target = nullptr;
    int64_t* wide = nullptr;
    bool* seen = nullptr;
    if (key == "Tgid") {
      target = &st.tgid;
      seen = &have_tgid;
    } else if (key == "Pid") {
      target = &st.pid;
      seen = &have_pid;
    } else if (key == "PPid") {
      target = &st.ppid;
      seen = &have_ppid;
    } else if (key == "Threads") {
      wide = &st.threads;
    } else {
      return;
    }
    std::optional<int64_t> v = parse_i64(trim(rest));
    if (!v || (target && (*v < 0 || *v > std::numeric_limits<int>::max()))) {
      err = bad_value(kFile, key, trim(rest));
      return;
    }
    if (target) *target = static_cast<int>(*v);
    if (wide) *wide = *v;
    if (seen) *seen = true;
  });
  if (err) return *err;
  if (!have_name) return parse_error(kFile, "missing Name");
  if (!have_tgid) return parse_error(kFile, "missing Tgid");
  if (!have_pid) return parse_error(kFile, "missing Pid");
  if (!have_ppid) return parse_error(kFile, "missing PPid");
  return st;
}

Result<SmapsRollup> parse_smaps_rollup(std::string_view text) {
  constexpr std::string_view kFile = "/proc/PID/smaps_rollup";
  SmapsRollup r;
  // Processes without an mm (kernel threads, zombies) get an empty file: that is zero usage,
  // not a format problem.
  if (trim(text).empty()) return r;
  // Pss_Anon/File/Shmem appeared in 5.8; older kernels simply leave them at 0.
  static constexpr std::array<KeyField<SmapsRollup>, 12> kFields{{
      {"Rss", &SmapsRollup::rss, true},
      {"Pss", &SmapsRollup::pss, true},
      {"Pss_Anon", &SmapsRollup::pss_anon, false},
      {"Pss_File", &SmapsRollup::pss_file, false},
      {"Pss_Shmem", &SmapsRollup::pss_shmem, false},
      {"Shared_Clean", &SmapsRollup::shared_clean, false},
      {"Shared_Dirty", &SmapsRollup::shared_dirty, false},
      {"Private_Clean", &SmapsRollup::private_clean, false},
      {"Private_Dirty", &SmapsRollup::private_dirty, false},
      {"Anonymous", &SmapsRollup::anonymous, false},
      {"Swap", &SmapsRollup::swap, false},
      {"SwapPss", &SmapsRollup::swap_pss, false},
  }};
  if (Status s = parse_key_values(text, {kFile}, kFields, r); !s) return s.error();
  return r;
}

Result<PidIo> parse_pid_io(std::string_view text) {
  // The kernel prints all seven lines together, so a missing one means we misread the file.
  static constexpr std::array<KeyField<PidIo>, 7> kFields{{
      {"rchar", &PidIo::rchar, true},
      {"wchar", &PidIo::wchar, true},
      {"syscr", &PidIo::syscr, true},
      {"syscw", &PidIo::syscw, true},
      {"read_bytes", &PidIo::read_bytes, true},
      {"write_bytes", &PidIo::write_bytes, true},
      {"cancelled_write_bytes", &PidIo::cancelled_write_bytes, true},
  }};
  PidIo io;
  if (Status s = parse_key_values(text, {"/proc/PID/io"}, kFields, io); !s) return s.error();
  return io;
}

}  // namespace pm::procfs
