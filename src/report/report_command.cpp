// SPDX-License-Identifier: Apache-2.0
#include "report/report_command.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string_view>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "core/output.h"
#include "core/safe_file.h"
#include "report/compare.h"
#include "report/html_page.h"
#include "report/page_data.h"
#include "report/recording.h"

namespace pm::report {
namespace {

constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

constexpr const char* kFooter = R"(
Examples:
  perf-monitor run --format json -o run.jsonl -- ./app
  perf-monitor report run.jsonl                  writes run.html: open it in any browser, offline
  perf-monitor report run.jsonl -o /tmp/r.html
  perf-monitor report --compare base*.jsonl -- new*.jsonl
                                                 what changed between the runs' summaries: the
                                                 command's own figures first, the significant
                                                 ones first; the unchanged folded into one line
  perf-monitor report --compare base*.jsonl -- new*.jsonl --all
                                                 every figure, in the same order
  perf-monitor report --compare b1.jsonl b2.jsonl b3.jsonl b4.jsonl b5.jsonl -- n1.jsonl ... n5.jsonl \
                      --fail-on 'proc_cpu_*' --min-effect 5
                                                 for CI: exit 3 when the tree's CPU time grew
                                                 significantly, by 5 % or more

Comparisons test each figure with the two-sided Mann-Whitney U test over runs (exact without
ties), give the Hodges-Lehmann shift with a confidence interval, and correct for testing many
figures at once. At least 4 runs per side are needed for a verdict, 9 or more to see small
changes; interleave the runs of both sides so drift in the machine hits both alike.

Exit status: 0 done; 3 with --fail-on, when a matching figure is significantly worse; 2 for
usage errors and files that cannot be read as recordings; 1 for other failures.
)";

int usage_error(const std::string& msg) {
  say(msg);
  return kExitUsage;
}

std::string default_output(const std::string& input) {
  std::string base = input;
  size_t slash = base.rfind('/');
  size_t dot = base.rfind('.');
  if (dot != std::string::npos && (slash == std::string::npos || dot > slash)) base.resize(dot);
  return base + ".html";
}

// An output written a piece at a time ("-": standard output). A file is opened as a root tool
// must (core/safe_file.h): the path beside a recording is often in another user's directory.
// The first failure is printed and ends the writing; without finish() succeeding, a file's
// path is left as it was.
class Writer {
 public:
  // False (printed, *status set) when the path cannot be written.
  bool open(const std::string& path, int* status) {
    path_ = path;
    status_ = status;
    if (path == "-") {
      fd_ = STDOUT_FILENO;
      return true;
    }
    auto opened = OutputFile::open(path);
    if (!opened) {
      say(fmt::format("cannot write {}: {}", path, opened.error().message));
      *status = kExitUsage;
      return false;
    }
    file_.emplace(std::move(*opened));
    fd_ = file_->fd();
    return true;
  }

  void write(std::string_view text) {
    bytes_ += text.size();
    while (ok_ && !text.empty()) {
      ssize_t n = ::write(fd_, text.data(), text.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        say(fmt::format("writing {} failed: {}", path_, n < 0 ? std::strerror(errno) : "nothing written"));
        *status_ = kExitFailure;
        ok_ = false;  // the temporary file goes with file_: the path is left as it was
        return;
      }
      text.remove_prefix(static_cast<size_t>(n));
    }
  }

  // True when everything was written and is in place.
  bool finish() {
    if (!ok_) return false;
    if (file_) {
      if (auto put = file_->commit(); !put) {
        say(put.error().message);
        *status_ = kExitFailure;
        return false;
      }
    }
    return true;
  }

  [[nodiscard]] size_t bytes() const { return bytes_; }

 private:
  std::string path_;
  int* status_ = nullptr;
  std::optional<OutputFile> file_;
  int fd_ = -1;
  bool ok_ = true;
  size_t bytes_ = 0;
};

// Writes text to path ("-": standard output); prints the error and returns false on failure.
bool write_output(const std::string& path, const std::string& text, int* status) {
  Writer w;
  if (!w.open(path, status)) return false;
  w.write(text);
  return w.finish();
}

void print_warnings(const Recording& rec, bool name_file) {
  for (const std::string& w : rec.warnings) {
    say(fmt::format("warning: {}{}", name_file ? rec.path + ": " : "", w));
  }
}

int report_one(const ReportOptions& o) {
  if (o.files.size() != 1) {
    return usage_error(o.files.empty()
                           ? "report: name the JSON Lines file to report on (see 'perf-monitor report --help')"
                           : "report takes one file; to compare runs: report --compare BASE.jsonl... -- "
                             "NEW.jsonl...");
  }
  if (o.format == "text") return usage_error("report: a single run's report is html or json; text is for --compare");
  for (const char* flag : {"--fail-on", "--figures", "--higher-is-better", "--all"}) {
    bool given = (std::string(flag) == "--fail-on" && !o.fail_on.empty()) ||
                 (std::string(flag) == "--figures" && !o.figures.empty()) ||
                 (std::string(flag) == "--higher-is-better" && !o.higher_is_better.empty()) ||
                 (std::string(flag) == "--all" && o.all);
    if (given) return usage_error(std::string("report: ") + flag + " is for --compare");
  }
  const bool from_stdin = o.files[0] == "-";
  if (from_stdin && o.output.empty() && o.format != "json")
    return usage_error("report -: a page of standard input needs a name: -o FILE ('-': standard output)");
  auto rec = read_recording(o.files[0]);
  if (!rec) return usage_error(rec.error().message);
  print_warnings(*rec, false);
  // The data and the page are written as they are made, never held whole.
  int status = 0;
  Writer writer;
  auto write = [&](std::string_view piece) { writer.write(piece); };
  if (o.format == "json") {
    if (!writer.open(o.output.empty() ? "-" : o.output, &status)) return status;
    write_report_json(*rec, write);
    writer.write("\n");
    writer.finish();
    return status;
  }
  std::string out = o.output.empty() ? default_output(o.files[0]) : o.output;
  std::string title = "perf-monitor report";
  const Json& cmd = !rec->header.is_null() && rec->header.contains("command")     ? rec->header["command"]
                    : !rec->summary.is_null() && rec->summary.contains("command") ? rec->summary["command"]
                                                                                  : Json();
  if (cmd.is_array()) {
    std::string words;
    for (const Json& w : cmd) {
      if (w.is_string()) words += (words.empty() ? "" : " ") + w.get<std::string>();
    }
    title += ": " + words;
  }
  if (title.size() > 200) {
    size_t cut = 200;
    while (cut > 0 && (static_cast<unsigned char>(title[cut]) & 0xc0) == 0x80) --cut;  // not inside a character
    title = title.substr(0, cut) + "...";
  }
  if (!writer.open(out, &status)) return status;
  write_page(
      title, from_stdin ? "standard input" : o.files[0], [&](const Sink& data) { write_report_json(*rec, data); },
      write);
  if (!writer.finish()) return status;
  if (out != "-") say(fmt::format("wrote {} ({:.1f} MiB)", out, static_cast<double>(writer.bytes()) / (1 << 20)));
  return 0;
}

int compare(const ReportOptions& o) {
  if (o.files.empty()) return usage_error("report --compare BASE.jsonl... -- NEW.jsonl...: name the new runs after --");
  CompareOptions co;
  co.alpha = o.alpha;
  co.correction = o.correction == "holm" ? Correction::kHolm : Correction::kBenjaminiHochberg;
  co.min_effect_percent = o.min_effect;
  co.fail_on = o.fail_on;
  co.higher_is_better = o.higher_is_better;
  co.only = o.figures;
  if (!co.fail_on.empty() && (o.base.size() < kMinRunsToDecide || o.files.size() < kMinRunsToDecide)) {
    return usage_error(fmt::format("--fail-on needs at least {} runs per side to decide ({} vs {} given)",
                                   kMinRunsToDecide, o.base.size(), o.files.size()));
  }
  std::string format = o.format.empty() ? "text" : o.format;
  if (format == "html" && o.output.empty())
    return usage_error("report --compare --format html: name the page with -o FILE");
  if (std::count(o.base.begin(), o.base.end(), "-") + std::count(o.files.begin(), o.files.end(), "-") > 1)
    return usage_error("report --compare: standard input ('-') can be read once only");
  std::vector<RunFigures> sides[2];
  const std::vector<std::string>* lists[2] = {&o.base, &o.files};
  for (int s = 0; s < 2; ++s) {
    for (const std::string& path : *lists[s]) {
      auto rec = read_recording(path);
      if (!rec) return usage_error(rec.error().message);
      // A comparison is of the summaries: whether a run has a timeline does not matter here.
      std::erase_if(rec->warnings, [](const std::string& w) { return w.starts_with("no interval records"); });
      print_warnings(*rec, true);
      auto figures = run_figures(*rec);
      if (!figures) return usage_error(figures.error().message);
      sides[s].push_back(std::move(*figures));
    }
  }
  Comparison c = compare_runs(sides[0], sides[1], co);
  int status = 0;
  std::string out = o.output.empty() ? "-" : o.output;
  if (format == "text") {
    if (!write_output(out, comparison_text(c, TextOptions{.all = o.all}), &status)) return status;
  } else if (format == "json") {
    if (!write_output(out, comparison_json(c) + "\n", &status)) return status;
  } else {
    std::string data = comparison_json(c);
    data.insert(1, o.all ? "\"kind\":\"compare\",\"format\":1,\"all\":true," : "\"kind\":\"compare\",\"format\":1,");
    std::string page =
        render_page("perf-monitor comparison",
                    fmt::format("{} base and {} new runs", c.base_files.size(), c.new_files.size()), std::move(data));
    if (!write_output(out, page, &status)) return status;
    say(fmt::format("wrote {}", out));
  }
  return c.regressions.empty() ? 0 : kExitRegression;
}

}  // namespace

CLI::App* add_report_command(CLI::App& app, ReportOptions& opts) {
  CLI::App* r = app.add_subcommand("report",
                                   "Write a self-contained HTML report of a JSON Lines recording, or "
                                   "compare runs");
  r->add_option("files", opts.files, "RUN.jsonl; with --compare, the new runs (after --)");
  r->add_option("--compare", opts.base, "Compare runs: --compare BASE.jsonl... -- NEW.jsonl...")->type_name("BASE...");
  r->add_option("-o,--output", opts.output,
                "Write here ('-': standard output). Default: RUN.html beside RUN.jsonl; with --compare, standard "
                "output");
  r->add_option("-f,--format", opts.format,
                "html (a report's default), json (the data), or for --compare: text (default), json, html")
      ->check(CLI::IsMember({"html", "text", "json"}));
  r->add_option("--alpha", opts.alpha, "--compare: significance level after correction (default 0.05)")
      ->check(CLI::Range(1e-6, 0.5));
  r->add_option("--correction", opts.correction,
                "--compare: for testing many figures at once: bh (Benjamini-Hochberg, default) or holm")
      ->check(CLI::IsMember({"bh", "holm"}));
  r->add_option("--min-effect", opts.min_effect,
                "--compare: only flag changes of at least PCT percent of the base (default 0)")
      ->type_name("PCT")
      ->check(CLI::Range(0.0, 1e9));
  r->add_option("--fail-on", opts.fail_on,
                "--compare: exit 3 when a figure matching GLOB is significantly worse (repeatable; '*' for all)")
      ->type_name("GLOB")
      ->allow_extra_args(false);
  r->add_option("--figures", opts.figures, "--compare: only the figures matching GLOB (repeatable)")
      ->type_name("GLOB")
      ->allow_extra_args(false);
  r->add_option("--higher-is-better", opts.higher_is_better,
                "--compare: figures matching GLOB get better as they grow (built in: ipc, idle, free, available)")
      ->type_name("GLOB")
      ->allow_extra_args(false);
  r->add_flag("--all", opts.all,
              "--compare: every figure; by default the text shows what changed and folds the rest into one line "
              "(the JSON keeps every figure, marked \"folded\"; the page folds them into a section that opens)");
  r->footer(kFooter);
  return r;
}

int run_report(const ReportOptions& opts) { return opts.base.empty() ? report_one(opts) : compare(opts); }

}  // namespace pm::report
