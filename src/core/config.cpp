// SPDX-License-Identifier: Apache-2.0
#include "core/config.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <set>

#include <toml++/toml.h>

#include "core/duration.h"
#include "core/fd.h"
#include "core/listen_address.h"

namespace pm {
namespace {

std::string where(std::string_view origin, const toml::source_region& src) {
  return std::string(origin) + ":" + std::to_string(src.begin.line) + ":" + std::to_string(src.begin.column);
}

// Reads one [section]: checks every key is known, and converts values with clear errors.
class Section {
 public:
  Section(std::string_view origin, std::string name, const toml::table& table)
      : origin_(origin), name_(std::move(name)), table_(table) {}

  Status check_keys(std::initializer_list<std::string_view> known) const {
    for (auto&& [key, node] : table_) {
      bool ok = false;
      for (auto k : known) ok = ok || key.str() == k;
      if (!ok) {
        std::string list;
        for (auto k : known) list += (list.empty() ? "" : ", ") + std::string(k);
        return make_error(Errc::kInvalidArgument, where(origin_, key.source()) + ": unknown key '" +
                                                      std::string(key.str()) + "' in [" + name_ +
                                                      "] (known keys: " + list + ")");
      }
    }
    return {};
  }

  Status get(std::string_view key, bool& out) const { return get_as<bool>(key, "true or false", out); }
  // An empty string is never a setting: leaving the key out is how to say "none".
  Status get(std::string_view key, std::string& out) const {
    std::string v;
    const toml::node* n = table_.get(key);
    if (n == nullptr) return {};
    PM_TRY(get_as<std::string>(key, "a non-empty string", v));
    if (v.empty()) return type_error(key, *n, "a non-empty string (leave the key out for the default)");
    out = std::move(v);
    return {};
  }
  Status get_int(std::string_view key, int64_t lo, int64_t hi, int& out) const {
    const toml::node* n = table_.get(key);
    if (n == nullptr) return {};
    auto v = n->value_exact<int64_t>();
    std::string range = "an integer from " + std::to_string(lo) + " to " + std::to_string(hi);
    if (!v || *v < lo || *v > hi) return type_error(key, *n, range.c_str());
    out = static_cast<int>(*v);
    return {};
  }

  Status get_seconds(std::string_view key, Duration& out) const {
    const toml::node* n = table_.get(key);
    if (n == nullptr) return {};
    std::optional<double> v = n->value<double>();
    if (!v) return type_error(key, *n, "a positive number of seconds");
    auto d = checked_duration(*v, std::to_string(*v) + " s");
    if (!d)
      return make_error(Errc::kInvalidArgument, where(origin_, n->source()) + ": [" + name_ + "] " + std::string(key) +
                                                    ": " + d.error().message);
    out = *d;
    return {};
  }

  Status get_duration(std::string_view key, std::optional<Duration>& out) const {
    const toml::node* n = table_.get(key);
    if (n == nullptr) return {};
    auto s = n->value<std::string>();
    if (!s) return type_error(key, *n, "a duration string such as \"100ms\"");
    auto d = parse_duration(*s);
    if (!d) return make_error(Errc::kInvalidArgument, where(origin_, n->source()) + ": " + d.error().message);
    out = *d;
    return {};
  }

  // "ns", "us" or "ms", as nanoseconds.
  Status get_unit(std::string_view key, uint64_t& out) const {
    const toml::node* n = table_.get(key);
    if (n == nullptr) return {};
    auto s = n->value<std::string>();
    if (s && *s == "ns") {
      out = 1;
    } else if (s && *s == "us") {
      out = 1000;
    } else if (s && *s == "ms") {
      out = 1'000'000;
    } else {
      return type_error(key, *n, "\"ns\", \"us\" or \"ms\"");
    }
    return {};
  }

  Status get(std::string_view key, std::vector<std::string>& out) const {
    const toml::node* n = table_.get(key);
    if (n == nullptr) return {};
    const toml::array* arr = n->as_array();
    if (arr == nullptr) return type_error(key, *n, "an array of strings");
    if (arr->empty()) return type_error(key, *n, "a non-empty array (leave the key out for the default)");
    out.clear();
    for (const toml::node& e : *arr) {
      auto s = e.value<std::string>();
      if (!s || s->empty()) return type_error(key, e, "an array of non-empty strings");
      out.push_back(*s);
    }
    return {};
  }

 private:
  template <typename T>
  Status get_as(std::string_view key, const char* what, T& out) const {
    const toml::node* n = table_.get(key);
    if (n == nullptr) return {};
    auto v = n->value_exact<T>();
    if (!v) return type_error(key, *n, what);
    out = *v;
    return {};
  }
  Status type_error(std::string_view key, const toml::node& n, const char* what) const {
    return make_error(Errc::kInvalidArgument,
                      where(origin_, n.source()) + ": [" + name_ + "] " + std::string(key) + " must be " + what);
  }

  std::string_view origin_;
  std::string name_;
  const toml::table& table_;
};

Status apply_section(std::string_view origin, const std::string& name, const toml::table& t, Config& c) {
  Section s(origin, name, t);
  if (name == "output") {
    PM_TRY(s.check_keys({"format", "file", "interval_secs", "interval", "duration"}));
    std::string format = "unset";
    PM_TRY(s.get("format", format));
    if (format != "unset") {
      if (format == "text")
        c.format = OutputFormat::kText;
      else if (format == "json")
        c.format = OutputFormat::kJson;
      else
        return make_error(Errc::kInvalidArgument,
                          where(origin, t.get("format")->source()) + ": [output] format must be \"text\" or \"json\"");
    }
    PM_TRY(s.get("file", c.output_path));
    PM_TRY(s.get_seconds("interval_secs", c.interval));
    std::optional<Duration> interval;
    PM_TRY(s.get_duration("interval", interval));
    if (interval) c.interval = *interval;
    c.intervals_asked = c.intervals_asked || interval || t.contains("interval_secs");
    PM_TRY(s.get_duration("duration", c.duration));
  } else if (name == "pmc") {
    PM_TRY(s.check_keys({"enabled", "interval_secs", "events"}));
    PM_TRY(s.get("enabled", c.pmc_enabled));
    Duration pmc{0};
    PM_TRY(s.get_seconds("interval_secs", pmc));
    if (pmc.count() > 0) c.pmc_interval = pmc;
    PM_TRY(s.get("events", c.pmc_events));
  } else if (name == "scheduler") {
    PM_TRY(s.check_keys({"enabled", "histogram_unit"}));
    PM_TRY(s.get("enabled", c.scheduler_enabled));
    PM_TRY(s.get_unit("histogram_unit", c.scheduler_hist_unit_ns));
  } else if (name == "block_io") {
    PM_TRY(s.check_keys({"enabled", "histogram_unit"}));
    PM_TRY(s.get("enabled", c.block_io_enabled));
    PM_TRY(s.get_unit("histogram_unit", c.block_io_hist_unit_ns));
  } else if (name == "file_poll") {
    PM_TRY(s.check_keys({"interval_secs", "cpu", "memory", "pressure", "numa", "thermal"}));
    PM_TRY(s.get_seconds("interval_secs", c.file_poll));
    PM_TRY(s.get("cpu", c.cpu));
    PM_TRY(s.get("memory", c.memory));
    PM_TRY(s.get("pressure", c.pressure));
    PM_TRY(s.get("numa", c.numa));
    PM_TRY(s.get("thermal", c.thermal));
  } else if (name == "process_tree") {
    PM_TRY(s.check_keys({"interval", "proc_events"}));
    PM_TRY(s.get_duration("interval", c.tree_interval));
    PM_TRY(s.get("proc_events", c.proc_events));
  } else if (name == "prometheus") {
    PM_TRY(s.check_keys({"listen"}));
    std::string listen;
    PM_TRY(s.get("listen", listen));
    // Must be an address we can listen on (an empty one is refused above: leave it out).
    if (!listen.empty()) {
      auto a = parse_listen_address(listen);
      if (!a) {
        return make_error(Errc::kInvalidArgument, where(origin, t.get("listen")->source()) +
                                                      ": [prometheus] listen: " + a.error().message);
      }
      c.prometheus_listen = *a;
    }
  } else if (name == "top") {
    PM_TRY(s.check_keys({"count", "sort", "cgroup_depth", "threads", "prometheus_processes", "max_series"}));
    PM_TRY(s.get_int("count", 0, 1000000, c.top_count));
    std::string sort;
    PM_TRY(s.get("sort", sort));
    if (!sort.empty()) {
      auto parsed = parse_top_sort(sort);
      if (!parsed) {
        return make_error(Errc::kInvalidArgument, where(origin, t.get("sort")->source()) +
                                                      ": [top] sort must be cpu, runq, blocked, io, faults or memory");
      }
      c.top_sort = *parsed;
    }
    PM_TRY(s.get_int("cgroup_depth", 0, 64, c.cgroup_depth));
    PM_TRY(s.get("threads", c.top_threads));
    PM_TRY(s.get("prometheus_processes", c.prometheus_processes));
    PM_TRY(s.get_int("max_series", 1, 1000000, c.max_series));
  } else {
    return make_error(Errc::kInvalidArgument,
                      where(origin, t.source()) + ": unknown section [" + name +
                          "] (known: output, pmc, scheduler, block_io, file_poll, process_tree, prometheus, top, "
                          "probes)");
  }
  return {};
}

bool is_bare_key_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

// Walks TOML text the way its lexer would, closely enough to measure it: strings and comments
// are skipped whole, a run of keys joined by dots ("a.b.c", also in a [header]) is counted, and
// brackets opened in a value are counted. Values such as 1.5 count as runs too: harmless.
class BoundsScan {
 public:
  BoundsScan(std::string_view text, std::string_view origin) : text_(text), origin_(origin) {}

  Status run() {
    if (text_.size() > kMaxConfigBytes) {
      return make_error(Errc::kInvalidArgument, std::string(origin_) + ": larger than " +
                                                    std::to_string(kMaxConfigBytes >> 20) +
                                                    " MiB: not a perf-monitor configuration");
    }
    // A UTF-8 byte order mark is the parser's to skip.
    size_t start = text_.substr(0, 3) == "\xEF\xBB\xBF" ? 3 : 0;
    for (size_t i = start; i < text_.size();) {
      char c = text_[i];
      if (c == '\n') {
        newline(i);
        end_run();
        value_token_ = false;
        ++i;
        continue;
      }
      if (c == ' ' || c == '\t' || c == '\r') {
        value_token_ = false;
        ++i;  // also between the parts of a key: a . b
        continue;
      }
      bool fresh = line_fresh_;
      line_fresh_ = false;
      if (c == '#') {
        while (i < text_.size() && text_[i] != '\n') ++i;
        line_fresh_ = fresh;
        value_token_ = false;
        continue;
      }
      if ((c == '"' || c == '\'') && opens_string(i, start)) {
        size_t from = i;
        i = skip_string(i);
        PM_TRY(string_error_);
        PM_TRY(token(from, i));
        value_token_ = !in_key_context();  // what is glued to a string belongs to a bad token
        continue;
      }
      // TOML allows other than ASCII only in strings and comments; and toml++ 3.3 reaches an
      // "unreachable" point (undefined behaviour) when it asks whether such a character is
      // whitespace, which it does wherever a token may end.
      if (static_cast<unsigned char>(c) >= 0x80) {
        return error(i, "a character other than ASCII outside a string or comment");
      }
      if (is_bare_key_char(c)) {
        size_t from = i;
        while (i < text_.size() && is_bare_key_char(text_[i])) ++i;
        PM_TRY(token(from, i));
        value_token_ = !in_key_context();
        continue;
      }
      if (c == '.' && run_parts_ > 0 && !after_dot_) {
        after_dot_ = true;
        ++i;
        continue;
      }
      end_run();
      // Inside a value's token (0[..., 1=2) brackets and '=' are just bad characters to the
      // parser: it reads on to the token's end (a blank, ',', ']', '}' or '#').
      if (value_token_ && c != ',' && c != ']' && c != '}') {
        ++i;
        continue;
      }
      value_token_ = false;
      if (c == '[' && fresh && containers_.empty() && !in_value_) {
        i += text_.substr(i, 2) == "[[" ? 2 : 1;  // a [table] or [[array of tables]] header
        continue;
      }
      bool key = in_key_context();
      if ((c == '[' || c == '{') && !key) {
        if (containers_.size() == kMaxValueNesting) {
          return error(i, "arrays and inline tables nest more than " + std::to_string(kMaxValueNesting) + " deep");
        }
        containers_.push_back(c);
        expect_key_ = c == '{';
      } else if ((c == ']' || c == '}') && !containers_.empty()) {
        containers_.pop_back();
        expect_key_ = false;  // what follows a value: ',' or the end of its container
      } else if (c == ',' && !containers_.empty()) {
        expect_key_ = containers_.back() == '{';
      } else if (c == '=' && key) {
        if (containers_.empty()) {
          in_value_ = true;
        } else {
          expect_key_ = false;
        }
      } else if (!key && c != ',' && c != ']' && c != '}') {
        value_token_ = true;  // a value that starts with '+', ':', '=', ...
      }
      ++i;
    }
    return {};
  }

 private:
  void newline(size_t i) {
    ++line_;
    line_start_ = i + 1;
    if (containers_.empty()) {
      in_value_ = false;
      line_fresh_ = true;
    }
  }

  // A quote opens a string only where TOML can have one: where a value begins (not inside a
  // value's token: 2:"..., +c."..., 0['...), and in a key at the start, after a blank, '[',
  // '.' or ','. Elsewhere the parser reads it as part of a bad value, asking of each character
  // after it whether it is whitespace: what follows is outside any string here too. (A quoted
  // part of a dotted key inside an inline table is refused by this, when it holds other than
  // ASCII: a small price.)
  [[nodiscard]] bool opens_string(size_t i, size_t start) const {
    if (!in_key_context()) return !value_token_;
    if (i == start) return true;
    return std::string_view(" \t\r\n=[{,.").find(text_[i - 1]) != std::string_view::npos;
  }

  // Where a key is read: a line outside any value, and an inline table before its '='.
  [[nodiscard]] bool in_key_context() const {
    return containers_.empty() ? !in_value_ : containers_.back() == '{' && expect_key_;
  }

  // The index just past the string that starts at i (or where it stops being one: the parser
  // says what is wrong with it).
  size_t skip_string(size_t i) {
    const char q = text_[i];
    const std::string triple(3, q);
    const bool multi = text_.substr(i, 3) == triple;
    i += multi ? 3 : 1;
    while (i < text_.size()) {
      char c = text_[i];
      if (c == '\\' && q == '"') {
        if (multi) {
          // After a backslash toml++ asks whether what follows is whitespace (a line-ending
          // backslash trims it): the first character after any blanks and newlines must be
          // ASCII (see run()).
          size_t j = i + 1;
          while (j < text_.size() && (text_[j] == ' ' || text_[j] == '\t' || text_[j] == '\r' || text_[j] == '\n')) {
            if (text_[j] == '\n') newline(j);
            ++j;
          }
          if (j < text_.size() && static_cast<unsigned char>(text_[j]) >= 0x80) {
            string_error_ = error(j, "a character other than ASCII right after a backslash and blanks");
            return text_.size();
          }
          i = j == i + 1 ? i + 2 : j;  // an escape, or the trimmed blanks
          continue;
        }
        if (i + 1 < text_.size() && text_[i + 1] == '\n') newline(i + 1);
        i += 2;
        continue;
      }
      if (c == '\n') {
        if (!multi) return i;  // a single-line string cannot go on
        newline(i);
      }
      if (c == q && (!multi || text_.substr(i, 3) == triple)) {
        i += multi ? 3 : 1;
        // A multi-line string may end with one or two quotes of its own before the closing three.
        for (int extra = 0; multi && extra < 2 && i < text_.size() && text_[i] == q; ++extra) ++i;
        return i;
      }
      ++i;
    }
    return i;
  }

  Status token(size_t start, size_t end) {
    if (after_dot_) {
      ++run_parts_;
    } else {
      run_parts_ = 1;
      run_start_ = start;
      run_line_ = line_;
      run_col_ = start - line_start_ + 1;
    }
    after_dot_ = false;
    if (run_parts_ > kMaxKeyParts) {
      return run_error("a dotted key or table name has more than " + std::to_string(kMaxKeyParts) + " parts");
    }
    if (run_parts_ > 1 && end - run_start_ > kMaxKeyBytes) {
      return run_error("a dotted key or table name is longer than " + std::to_string(kMaxKeyBytes) + " bytes");
    }
    return {};
  }

  void end_run() {
    run_parts_ = 0;
    after_dot_ = false;
  }

  [[nodiscard]] Error error(size_t i, const std::string& what) const {
    return make_error(Errc::kInvalidArgument, std::string(origin_) + ":" + std::to_string(line_) + ":" +
                                                  std::to_string(i - line_start_ + 1) + ": " + what);
  }
  [[nodiscard]] Error run_error(const std::string& what) const {
    return make_error(Errc::kInvalidArgument, std::string(origin_) + ":" + std::to_string(run_line_) + ":" +
                                                  std::to_string(run_col_) + ": " + what);
  }

  std::string_view text_, origin_;
  Status string_error_;  // what skip_string found wrong
  size_t line_ = 1, line_start_ = 0;
  bool line_fresh_ = true;  // nothing but blanks and comments on this line so far
  bool in_value_ = false;   // after a key's '=' (until the line ends outside brackets)
  std::vector<char> containers_;  // '[' and '{' open in the value, innermost last
  bool expect_key_ = false;       // in the innermost inline table, before a key's '='
  bool value_token_ = false;      // in a value, inside a token (a number, a date, a bad one)
  size_t run_parts_ = 0;    // keys in the current dotted run (0: none)
  bool after_dot_ = false;  // the run's last token is followed by a '.'
  size_t run_start_ = 0, run_line_ = 0, run_col_ = 0;
};

}  // namespace

Status check_toml_bounds(std::string_view text, std::string_view origin) { return BoundsScan(text, origin).run(); }

Status apply_toml(std::string_view text, std::string_view origin, Config& config) {
  PM_TRY(check_toml_bounds(text, origin));
  toml::table doc;
  try {
    doc = toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    return make_error(Errc::kInvalidArgument, where(origin, e.source()) + ": " + std::string(e.description()));
  }
  for (auto&& [key, node] : doc) {
    std::string name(key.str());
    if (name == "probes") {
      const toml::array* arr = node.as_array();
      if (arr == nullptr || (!arr->empty() && !arr->is_array_of_tables())) {
        return make_error(Errc::kInvalidArgument,
                          where(origin, node.source()) + ": probes must be written as [[probes]] tables");
      }
      for (const toml::node& p : *arr) {
        Section s(origin, "[probes]", *p.as_table());
        PM_TRY(s.check_keys({"binary", "function", "request_id_arg"}));
        ProbeSpec spec;
        PM_TRY(s.get("binary", spec.binary));
        PM_TRY(s.get("function", spec.function));
        PM_TRY(s.get_int("request_id_arg", 1, 6, spec.arg));
        if (spec.binary.empty() || spec.function.empty()) {
          return make_error(Errc::kInvalidArgument, where(origin, p.source()) +
                                                        ": [[probes]] needs binary and function, e.g. binary = "
                                                        "\"./app\" and function = \"process_request\"");
        }
        config.probes.push_back(std::move(spec));
      }
      continue;
    }
    const toml::table* t = node.as_table();
    if (t == nullptr) {
      return make_error(Errc::kInvalidArgument, where(origin, key.source()) + ": unknown top-level key '" + name +
                                                    "': settings belong in sections such as [output]");
    }
    PM_TRY(apply_section(origin, name, *t, config));
  }
  return {};
}

namespace {

const char* file_type(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// How long a pipe may take to deliver the whole configuration.
constexpr auto kPipeDeadline = std::chrono::seconds(2);

}  // namespace

Result<std::string> read_config_text(const std::string& path) {
  const std::string what = "cannot read config file " + path;
  struct stat st {};
  // stat before open: opening a device can have effects of its own (a tape rewinds).
  if (::stat(path.c_str(), &st) != 0) return Error::from_errno(errno, what);
  if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode)) {
    return make_error(Errc::kInvalidArgument, what + ": it is " + file_type(st.st_mode) + ", not a file");
  }
  // Non-blocking: opening a FIFO nobody writes to does not wait for a writer.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (!fd) return Error::from_errno(errno, what);
  if (::fstat(fd.get(), &st) != 0) return Error::from_errno(errno, what);
  const bool pipe = S_ISFIFO(st.st_mode);
  if (!S_ISREG(st.st_mode) && !pipe) {
    return make_error(Errc::kInvalidArgument, what + ": it is " + file_type(st.st_mode) + ", not a file");
  }
  auto too_large = [&] {
    return make_error(Errc::kInvalidArgument, what + ": larger than " + std::to_string(kMaxConfigBytes >> 20) +
                                                  " MiB: not a perf-monitor configuration");
  };
  if (!pipe && static_cast<uint64_t>(st.st_size) > kMaxConfigBytes) return too_large();
  std::string text;
  const auto deadline = std::chrono::steady_clock::now() + kPipeDeadline;
  char buf[16384];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n > 0) {
      // A file that grows while it is read (or a pipe that does not stop) is cut off here.
      if (text.size() + static_cast<size_t>(n) > kMaxConfigBytes) return too_large();
      text.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n == 0) {
      // A FIFO that no process has open for writing reads as at its end at once.
      if (pipe && text.empty()) {
        return make_error(Errc::kInvalidArgument, what + ": it is a FIFO or pipe that nothing was written to");
      }
      break;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN) return Error::from_errno(errno, what);
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      return make_error(Errc::kInvalidArgument, what + ": the pipe did not reach its end within " +
                                                    std::to_string(kPipeDeadline.count()) + " s");
    }
    pollfd p{fd.get(), POLLIN, 0};
    ::poll(&p, 1, static_cast<int>(left.count()));
  }
  return text;
}

Status load_config_file(const std::string& path, Config& config) {
  auto text = read_config_text(path);
  if (!text) return text.error();
  return apply_toml(*text, path, config);
}

}  // namespace pm
