// SPDX-License-Identifier: Apache-2.0
// The text sink: a compact block per interval for people at a terminal, and a readable summary.
// The sources lay out their own metrics (core/text_layout.h): this sink makes a block of each
// record, lets every layout found among the record's metrics show its figures, and prints the
// sections. A value no layout showed is printed generically, so nothing read ever disappears.
#include <algorithm>
#include <map>
#include <cmath>

#include <fmt/format.h>

#include "core/text.h"
#include "core/text_layout.h"
#include "sinks/format.h"
#include "sinks/sink.h"
#include "sinks/top_table.h"

namespace pm {
namespace {

void fill(TextBlock& b, const IntervalRecord& rec) {
  b.reserve(rec.values.size());
  for (const IntervalValue& v : rec.values) {
    if (v.desc->in_interval_table) continue;
    b.add({v.desc, v.labels, v.value, v.rate, v.min, v.max, static_cast<double>(bucket_total(v.buckets)), v.p50, v.p90,
           v.p99, v.derived});
  }
}

void fill(TextBlock& b, const SummaryRecord& rec) {
  b.reserve(rec.values.size());
  for (const SummaryValue& v : rec.values) {
    bool counts = v.desc->kind != MetricKind::kGauge && !v.derived;
    double rate = counts && rec.seconds > 0 ? v.value / rec.seconds : std::nan("");
    b.add({v.desc, v.labels, v.value, rate, v.min, v.max, static_cast<double>(bucket_total(v.buckets)), v.p50, v.p90,
           v.p99, v.derived, v.max_lower_bound});
  }
}

// What no layout showed (a source without one yet): "family  name{labels}=value ...".
std::string generic_lines(const TextBlock& b) {
  std::string s, family;
  for (const Shown* v : b.unshown()) {
    if (v->desc->family != family) {
      if (!family.empty()) s += "\n";
      family = v->desc->family;
      s += fmt::format("{:<8}", family);
    }
    std::string lbl = labels_text(*v->labels);
    s += fmt::format(" {}{}={}", v->desc->name, lbl.empty() ? "" : "{" + lbl + "}",
                     v->desc->unit == Unit::kBytes ? human_bytes(v->value) : fmt::format("{:g}", v->value));
  }
  if (!family.empty()) s += "\n";
  return s;
}

void lay_out(TextBlock& b) {
  for (TextLayout layout : b.layouts()) layout(b);
}

// A stack in one line, the way a person reads it: its innermost frames of the program first
// (leaf <- caller <- ...), then where in the kernel it was (the system call, say).
// `lines` (one per frame, or none): each user frame shown with its file's name and line.
std::string stack_line(const std::vector<std::string>& frames, const std::vector<SourceLine>& lines = {}) {
  std::vector<std::string> user;
  std::vector<std::string_view> kernel;
  for (size_t i = 1; i < frames.size(); i++) {  // frames[0]: the thread's name
    std::string_view f = frames[i];
    if (f.ends_with("_[k]")) {
      f.remove_suffix(4);
      if (!f.starts_with("entry_SYSCALL") && !f.starts_with("do_syscall") && !f.starts_with("asm_")) kernel.push_back(f);
    } else if (f.ends_with(" (inlined)")) {
      // One line holds five frames: the functions that were called. (An inlined call is in the
      // files and the report; its caller's line is where it was called.)
      continue;
    } else if (i < lines.size() && lines[i].line != 0) {
      std::string_view file = lines[i].file;
      if (auto slash = file.rfind('/'); slash != std::string_view::npos) file.remove_prefix(slash + 1);
      user.push_back(fmt::format("{} ({}:{})", f, file, lines[i].line));
    } else {
      user.emplace_back(f);
    }
  }
  std::string s;
  constexpr size_t kShown = 5;
  for (size_t n = 0; n < user.size() && n < kShown; n++) s += (n == 0 ? "" : " <- ") + user[user.size() - 1 - n];
  if (user.size() > kShown) s += " <- ...";
  if (!kernel.empty()) s += (s.empty() ? "in the kernel: " : "; in the kernel: ") + std::string(kernel.front());
  return fmt::format("{} [{}]", s.empty() ? "[no frames]" : s, frames.empty() ? "?" : frames[0]);
}

// The slowest requests of probed functions, from the run's information (not metrics).
std::string slowest_requests(const RunInfo& info) {
  std::string s;
  for (const Span& r : info.slowest_requests) {
    // --stacks=off: where it was off the CPU longest, on the line after its own.
    std::string where = r.blocked_stack.empty() ? std::string()
                                                : fmt::format("    off the CPU longest ({}) in: {}\n",
                                                              human_time(r.blocked_stack_seconds),
                                                              stack_line(r.blocked_stack, r.blocked_stack_lines));
    std::string why;  // thread context: what the blocked time waited on
    for (auto [v, what] : {std::pair{r.blocked_io_seconds, "I/O"}, std::pair{r.blocked_sleep_seconds, "sleep"},
                           std::pair{r.blocked_lock_seconds, "lock"}, std::pair{r.blocked_other_seconds, "other"}}) {
      if (v > 0) why += fmt::format("{}{} {}", why.empty() ? "" : ", ", what, human_time(v));
    }
    if (!r.trace_id.empty()) {
      // OpenTelemetry thread context: the application's span, by its IDs.
      s += fmt::format(
          "  span {} of trace {}: {} = {} on CPU + {} blocked{} + {} run queue; on {} thread{}; {} written, {} read; {} "
          "switches (pid {})\n",
          printable(r.parent_span_id), printable(r.trace_id), human_time(r.seconds), human_time(r.on_cpu_seconds),
          human_time(r.blocked_seconds), why.empty() ? "" : " (" + why + ")", human_time(r.runq_seconds), r.threads,
          r.threads == 1 ? "" : "s", human_bytes(static_cast<double>(r.bio_write_bytes)), human_bytes(static_cast<double>(r.bio_read_bytes)),
          r.voluntary_switches + r.involuntary_switches, r.pid);
      continue;
    }
    if (r.polls > 0) {
      // Thread context: its polls' time, and its time between polls (pending, on no thread).
      s += fmt::format(
          "  request {}: {} = {} on CPU + {} blocked{} + {} run queue + {} pending; {} polls on {} threads; {} written, "
          "{} read; {} switches (pid {})\n",
          r.request_id.value_or(0), human_time(r.seconds), human_time(r.on_cpu_seconds), human_time(r.blocked_seconds),
          why.empty() ? "" : " (" + why + ")", human_time(r.runq_seconds), human_time(r.pending_seconds), r.polls,
          r.threads, human_bytes(static_cast<double>(r.bio_write_bytes)),
          human_bytes(static_cast<double>(r.bio_read_bytes)), r.voluntary_switches + r.involuntary_switches, r.pid);
      continue;
    }
    s += fmt::format(
        "  request {}: {} = {} on CPU + {} blocked + {} run queue; {} written, {} read; {} switches; {} faults ({}, pid "
        "{} tid {})\n",
        r.request_id.value_or(0), human_time(r.seconds), human_time(r.on_cpu_seconds), human_time(r.blocked_seconds),
        human_time(r.runq_seconds), human_bytes(static_cast<double>(r.bio_write_bytes)),
        human_bytes(static_cast<double>(r.bio_read_bytes)), r.voluntary_switches + r.involuntary_switches,
        r.page_faults, printable(r.function), r.pid, r.tid);
    s += where;
  }
  return s;
}

// Stacks as the summary shows them, one line each: those that read the same (their kernel frames
// differ below the system call) summed, heaviest first.
std::vector<std::pair<std::string, uint64_t>> by_line(const std::vector<StackProfile::Entry>& entries) {
  std::map<std::string, uint64_t> sum;
  for (const StackProfile::Entry& e : entries) sum[stack_line(e.frames)] += e.value;
  std::vector<std::pair<std::string, uint64_t>> out(sum.begin(), sum.end());
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

// The top stacks (--stacks): where the target ran, and where it waited.
std::string top_stacks(const RunInfo& info) {
  if (!info.stacks) return {};
  const StackProfile& p = *info.stacks;
  constexpr size_t kTop = 5;
  std::string s;
  if (p.on_cpu_wanted) {
    uint64_t total = p.on_cpu_samples();
    s += fmt::format("on-CPU stacks: {} samples ({} of CPU at {:.0f} Hz){}\n", total,
                     human_time(static_cast<double>(total * p.period_ns) * 1e-9),
                     p.period_ns > 0 ? 1e9 / static_cast<double>(p.period_ns) : 0.0, total > 0 ? ", the top ones:" : "");
    auto lines = by_line(p.on_cpu);
    for (size_t i = 0; i < lines.size() && i < kTop; i++) {
      s += fmt::format("  {:5.1f}%  {}\n", 100.0 * static_cast<double>(lines[i].second) / static_cast<double>(total),
                       lines[i].first);
    }
  }
  if (p.off_cpu_wanted) {
    uint64_t total = p.off_cpu_ns();
    s += fmt::format("off-CPU stacks: {} off the CPU{}\n", human_time(static_cast<double>(total) * 1e-9),
                     total > 0 ? ", the top ones:" : "");
    auto lines = by_line(p.off_cpu);
    for (size_t i = 0; i < lines.size() && i < kTop; i++) {
      s += fmt::format("  {:5.1f}%  {:>9}  {}\n", 100.0 * static_cast<double>(lines[i].second) / static_cast<double>(total),
                       human_time(static_cast<double>(lines[i].second) * 1e-9), lines[i].first);
    }
  }
  if (p.records_lost != 0 || p.off_lost_ns != 0) {
    s += fmt::format("note: {} stack records found no room in the ring buffer; {} off the CPU found no place\n",
                     p.records_lost, human_time(static_cast<double>(p.off_lost_ns) * 1e-9));
  }
  return s;
}

// The sources that could not start, named on one line ("pmc (cycles, instructions)" for a
// family's events); `perf-monitor list` says why for each.
std::string names_of(const std::vector<const Unavailable*>& list) {
  std::string s, family_events;
  auto close_family = [&] {
    if (family_events.empty()) return;
    s += (s.empty() ? "" : ", ") + std::string("pmc (") + family_events + ")";
    family_events.clear();
  };
  for (const Unavailable* u : list) {
    if (u->source.starts_with("pmc.")) {
      family_events += (family_events.empty() ? "" : ", ") + u->source.substr(4);
      continue;
    }
    s += (s.empty() ? "" : ", ") + u->source;
  }
  close_family();
  return s;
}

class TextSink final : public Sink {
  static constexpr int kEnd = 1 << 30;

 public:
  TextSink(Output& out, const SinkOptions& opts) : out_(out), opts_(opts) {}

  // Once, at start, on standard error: what this host lacks on one line, and in full what the
  // user asked for by name or what is read another way. Not repeated in the summary.
  void unavailable(const std::vector<Unavailable>& list) override {
    std::vector<const Unavailable*> named;
    for (const Unavailable& u : list) {
      said_.push_back(u.source);
      if (opts_.quiet) continue;
      if (u.detail) {
        say(fmt::format("{}: {}", u.source, u.reason));
      } else {
        named.push_back(&u);
      }
    }
    if (!named.empty()) say("not available here: " + names_of(named) + " (`perf-monitor list` says why)");
  }

  void interval(const IntervalRecord& rec) override {
    if (!opts_.intervals) return;
    TextBlock b(false, rec.seconds);
    fill(b, rec);
    lay_out(b);
    write(fmt::format("--- {} ({:.2f} s)\n", iso8601(rec.timestamp), rec.seconds) + b.render(0, kEnd) +
          generic_lines(b) + (rec.top ? top_tables_text(*rec.top) : std::string()));
  }

  void summary(const SummaryRecord& rec, const RunInfo& info, const std::vector<Unavailable>& list) override {
    std::string s = "=== perf-monitor summary\n";
    if (info.mode == "run") {
      s += fmt::format("command  {} (pid {}) ", shell_words(info.command), info.pid);
      if (info.signal)
        s += fmt::format("killed by signal {}", *info.signal);
      else if (info.exit_code)
        s += fmt::format("exited with status {}", *info.exit_code);
      else
        s += "still running";
    } else if (info.mode == "attach") {
      s += fmt::format("pid      {} ", info.pid);
    } else {
      s += "system  ";
    }
    s += fmt::format(" after {:.2f} s ({})\n", rec.seconds, info.end_reason);
    TextBlock b(true, rec.seconds);
    fill(b, rec);
    lay_out(b);
    // The target first (its tree, probes, and counters, which count the tree in run and attach),
    // then the system around it.
    s += b.render(0, text_order::kSystem);
    s += slowest_requests(info);
    s += top_stacks(info);
    if (info.mode != "system" && b.any_section(text_order::kSystem, kEnd)) s += "system over the run:\n";
    s += b.render(text_order::kSystem, kEnd);
    s += generic_lines(b);
    // Only what was not said at start: figures that turned out not to be read during the run.
    std::vector<Unavailable> fresh;
    for (const Unavailable& u : list) {
      if (std::find(said_.begin(), said_.end(), u.source) == said_.end()) fresh.push_back(u);
    }
    for (const auto& [reason, sources] : by_reason(fresh)) s += fmt::format("not available: {}: {}\n", sources, reason);
    if (info.missed_ticks != 0) s += fmt::format("note: {} sampling ticks were served late\n", info.missed_ticks);
    if (info.proc_event_overruns != 0) {
      s += fmt::format("note: the kernel dropped {} fork/exit notifications; /proc walks covered them\n",
                       info.proc_event_overruns);
    }
    write(s);
  }

 private:
  void write(const std::string& s) {
    out_.write(s);
  }
  Output& out_;
  SinkOptions opts_;
  std::vector<std::string> said_;  // the sources named at start
};

}  // namespace

std::unique_ptr<Sink> make_text_sink(Output& out, const SinkOptions& opts) {
  return std::make_unique<TextSink>(out, opts);
}

}  // namespace pm
