// SPDX-License-Identifier: Apache-2.0
#include "sources/counters/event_catalogue.h"

#include <linux/perf_event.h>

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <optional>
#include <string_view>
#include <utility>

#include "core/file_reader.h"
#include "core/text.h"

namespace pm::counters {
namespace {

struct Generic {
  const char* name;   // perf's spelling, what EventSpec::name gets
  const char* alias;  // the other name perf accepts, or nullptr
  EventKind kind;
  uint64_t config;
};

constexpr Generic kGeneric[] = {
    {"cycles", "cpu-cycles", EventKind::kHardware, PERF_COUNT_HW_CPU_CYCLES},
    {"instructions", nullptr, EventKind::kHardware, PERF_COUNT_HW_INSTRUCTIONS},
    {"cache-references", nullptr, EventKind::kHardware, PERF_COUNT_HW_CACHE_REFERENCES},
    {"cache-misses", nullptr, EventKind::kHardware, PERF_COUNT_HW_CACHE_MISSES},
    {"branch-instructions", "branches", EventKind::kHardware, PERF_COUNT_HW_BRANCH_INSTRUCTIONS},
    {"branch-misses", nullptr, EventKind::kHardware, PERF_COUNT_HW_BRANCH_MISSES},
    {"bus-cycles", nullptr, EventKind::kHardware, PERF_COUNT_HW_BUS_CYCLES},
    {"stalled-cycles-frontend", "idle-cycles-frontend", EventKind::kHardware, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND},
    {"stalled-cycles-backend", "idle-cycles-backend", EventKind::kHardware, PERF_COUNT_HW_STALLED_CYCLES_BACKEND},
    {"ref-cycles", nullptr, EventKind::kHardware, PERF_COUNT_HW_REF_CPU_CYCLES},
    {"cpu-clock", nullptr, EventKind::kSoftware, PERF_COUNT_SW_CPU_CLOCK},
    {"task-clock", nullptr, EventKind::kSoftware, PERF_COUNT_SW_TASK_CLOCK},
    {"page-faults", "faults", EventKind::kSoftware, PERF_COUNT_SW_PAGE_FAULTS},
    {"context-switches", "cs", EventKind::kSoftware, PERF_COUNT_SW_CONTEXT_SWITCHES},
    {"cpu-migrations", "migrations", EventKind::kSoftware, PERF_COUNT_SW_CPU_MIGRATIONS},
    {"minor-faults", nullptr, EventKind::kSoftware, PERF_COUNT_SW_PAGE_FAULTS_MIN},
    {"major-faults", nullptr, EventKind::kSoftware, PERF_COUNT_SW_PAGE_FAULTS_MAJ},
    {"alignment-faults", nullptr, EventKind::kSoftware, PERF_COUNT_SW_ALIGNMENT_FAULTS},
    {"emulation-faults", nullptr, EventKind::kSoftware, PERF_COUNT_SW_EMULATION_FAULTS},
};

constexpr std::pair<const char*, uint64_t> kCaches[] = {
    {"L1-dcache", PERF_COUNT_HW_CACHE_L1D}, {"L1-icache", PERF_COUNT_HW_CACHE_L1I}, {"LLC", PERF_COUNT_HW_CACHE_LL},
    {"dTLB", PERF_COUNT_HW_CACHE_DTLB},     {"iTLB", PERF_COUNT_HW_CACHE_ITLB},     {"branch", PERF_COUNT_HW_CACHE_BPU},
    {"node", PERF_COUNT_HW_CACHE_NODE},
};

// Suffix, op and result of each hardware cache event, in the order `perf list` prints them.
struct CacheOp {
  const char* suffix;
  uint64_t op, result;
};
constexpr CacheOp kCacheOps[] = {
    {"-loads", PERF_COUNT_HW_CACHE_OP_READ, PERF_COUNT_HW_CACHE_RESULT_ACCESS},
    {"-load-misses", PERF_COUNT_HW_CACHE_OP_READ, PERF_COUNT_HW_CACHE_RESULT_MISS},
    {"-stores", PERF_COUNT_HW_CACHE_OP_WRITE, PERF_COUNT_HW_CACHE_RESULT_ACCESS},
    {"-store-misses", PERF_COUNT_HW_CACHE_OP_WRITE, PERF_COUNT_HW_CACHE_RESULT_MISS},
    {"-prefetches", PERF_COUNT_HW_CACHE_OP_PREFETCH, PERF_COUNT_HW_CACHE_RESULT_ACCESS},
    {"-prefetch-misses", PERF_COUNT_HW_CACHE_OP_PREFETCH, PERF_COUNT_HW_CACHE_RESULT_MISS},
};

Error invalid(std::string message) { return make_error(Errc::kInvalidArgument, std::move(message)); }

// Files beside an alias in <pmu>/events that describe it rather than name an event.
bool is_alias_side_file(std::string_view n) {
  return n.ends_with(".scale") || n.ends_with(".unit") || n.ends_with(".per-pkg") || n.ends_with(".snapshot");
}

// Sorted and comma-separated, for error messages that list what exists.
std::string join(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// Splits off the text before the next `sep` (all of it when there is none).
std::string_view next_item(std::string_view& s, char sep) {
  size_t at = s.find(sep);
  std::string_view item = s.substr(0, at);
  s = at == std::string_view::npos ? std::string_view{} : s.substr(at + 1);
  return item;
}

// "5" or "3-7", as cpumask and format files write ranges.
std::optional<std::pair<uint64_t, uint64_t>> parse_range(std::string_view r, uint64_t max) {
  size_t dash = r.find('-');
  auto lo = parse_u64(r.substr(0, dash));
  auto hi = dash == std::string_view::npos ? lo : parse_u64(r.substr(dash + 1));
  if (!lo || !hi || *lo > *hi || *hi > max) return std::nullopt;
  return std::pair{*lo, *hi};
}

std::optional<uint64_t> parse_hex(std::string_view s) {
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 16);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }
bool is_alnum(char c) { return (c >= '0' && c <= '9') || (lower(c) >= 'a' && lower(c) <= 'z'); }

// Lookup key of a generic name: case folded, '_' read as '-' (the config file's spelling).
std::string fold(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = c == '_' ? '-' : lower(c);
  return out;
}

EventSpec generic_spec(const Generic& g) {
  EventSpec e;
  e.name = g.name;
  e.kind = g.kind;
  e.type = g.kind == EventKind::kHardware ? PERF_TYPE_HARDWARE : PERF_TYPE_SOFTWARE;
  e.config = g.config;
  if (g.kind == EventKind::kSoftware && (g.config == PERF_COUNT_SW_CPU_CLOCK || g.config == PERF_COUNT_SW_TASK_CLOCK)) {
    e.scale = 1e-9;  // the clocks count nanoseconds
    e.unit = "seconds";
  }
  return e;
}

// Generic and cache events, built once: lookups and suggestions walk this list.
const std::vector<EventSpec>& builtin_specs() {
  static const std::vector<EventSpec> specs = [] {
    std::vector<EventSpec> v;
    for (const Generic& g : kGeneric) v.push_back(generic_spec(g));
    for (const auto& [cache, id] : kCaches) {
      for (const CacheOp& op : kCacheOps) {
        EventSpec& e = v.emplace_back();
        e.name = std::string(cache) + op.suffix;
        e.kind = EventKind::kHwCache;
        e.type = PERF_TYPE_HW_CACHE;
        e.config = id | (op.op << 8) | (op.result << 16);
      }
    }
    return v;
  }();
  return specs;
}

Error unknown_event(std::string_view text) {
  // Compare folded forms so "CACHE_MISSEZ" still finds cache-misses; aliases count as candidates
  // but are suggested under their own spelling.
  std::string key = fold(text);
  // Beyond about a third of the name, a "suggestion" is noise.
  size_t limit = std::max<size_t>(2, key.size() / 3);
  std::vector<std::pair<size_t, std::string>> scored;
  auto consider = [&](std::string_view name) {
    // The distance is at least the difference in length: only names that could come within
    // the limit are measured (the cost is the product of the lengths).
    size_t gap = key.size() > name.size() ? key.size() - name.size() : name.size() - key.size();
    if (gap <= limit) scored.emplace_back(edit_distance(key, fold(name)), std::string(name));
  };
  for (const EventSpec& e : builtin_specs()) consider(e.name);
  for (const Generic& g : kGeneric) {
    if (g.alias) consider(g.alias);
  }
  std::sort(scored.begin(), scored.end());
  std::string hints;
  for (size_t i = 0; i < scored.size() && i < 3 && scored[i].first <= limit; ++i) {
    hints += (i ? ", " : "") + scored[i].second;
  }
  std::string msg = "unknown event '" + std::string(text) + "'";
  if (!hints.empty()) msg += " (did you mean: " + hints + "?)";
  return invalid(msg + "; see 'perf-monitor list'");
}

// "123" or "0x7b".
std::optional<uint64_t> parse_number(std::string_view s) {
  if (s.starts_with("0x") || s.starts_with("0X")) return parse_hex(s.substr(2));
  return parse_u64(s);
}

Result<std::string> read_text(const std::string& path) {
  FileReader reader;
  auto r = reader.read(path);
  if (!r) return r.error();
  return std::string(trim(*r));
}

// A term or alias name becomes a path component under sys_root: keep it one plain name.
bool is_plain_name(std::string_view s) {
  if (s.empty() || s == "." || s == "..") return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return is_alnum(c) || c == '_' || c == '-' || c == '.'; });
}

// Parses a PMU's terms ("event=0x2e,umask=0x41", "cache-misses", "config1=5") into an EventSpec
// whose type and pmu are already set.
class PmuParser {
 public:
  PmuParser(std::string pmu_dir, EventSpec& spec) : dir_(std::move(pmu_dir)), spec_(spec) {}

  Status terms(std::string_view text, int depth) {
    // Aliases expand to terms, which in sysfs never name aliases; the bound only stops a loop.
    if (depth > 4) return invalid("alias of '" + spec_.name + "' nests too deep");
    if (trim(text).empty()) return invalid("no terms in '" + spec_.name + "'");
    // The loop below cannot see an empty last term: next_item leaves "" after "a," as after "a".
    if (trim(text).ends_with(',')) return invalid("empty term in '" + spec_.name + "'");
    do {
      PM_TRY(term(trim(next_item(text, ',')), depth));
    } while (!text.empty());
    return {};
  }

  // The terms as the user gave them, each written one way: "name" or "name=0xVALUE".
  [[nodiscard]] const std::string& canonical() const { return canonical_; }

 private:
  Status term(std::string_view t, int depth) {
    size_t eq = t.find('=');
    std::string_view name = trim(t.substr(0, eq));
    if (name.empty()) return invalid("empty term in '" + spec_.name + "'");
    if (!is_plain_name(name)) {
      return invalid("bad term '" + std::string(name) + "' in '" + spec_.name + "'");
    }
    uint64_t value = 1;  // a bare format name means name=1 (perf's "inv", "edge")
    if (eq != std::string_view::npos) {
      auto v = parse_number(trim(t.substr(eq + 1)));
      if (!v) {
        return invalid("bad value in term '" + std::string(t) + "' of '" + spec_.name +
                       "': write a decimal or 0x-prefixed hex number");
      }
      value = *v;
      if (depth == 0) add_canonical(std::string(name) + "=" + hex(value));
    } else {
      if (depth == 0) add_canonical(std::string(name));
      if (auto alias = read_text(dir_ + "/events/" + std::string(name)); alias.ok()) {
        return expand_alias(name, *alias, depth);
      }
    }
    // Direct fields set the whole word; format terms below only touch their own bits.
    if (uint64_t* direct = field(name)) {
      *direct = value;
      return {};
    }
    std::string format_path = dir_ + "/format/" + std::string(name);
    auto format = read_text(format_path);
    if (!format) {
      if (format.error().code != Errc::kNotFound) return format.error();
      return unknown_term(name);
    }
    return pack(name, value, *format, format_path);
  }

  Status expand_alias(std::string_view name, std::string_view content, int depth) {
    PM_TRY(terms(content, depth + 1));
    std::string base = dir_ + "/events/" + std::string(name);
    if (auto scale = read_text(base + ".scale"); scale.ok()) {
      auto v = parse_double(*scale);
      if (!v) return make_error(Errc::kParse, base + ".scale: not a number: '" + *scale + "'");
      spec_.scale = *v;
    }
    if (auto unit = read_text(base + ".unit"); unit.ok()) spec_.unit = *unit;
    return {};
  }

  // Puts `value` into the bit ranges a format file names, e.g. "config:0-7" or
  // "config:0-7,32-35": low bits of the value fill the first range, the next bits the second.
  Status pack(std::string_view name, uint64_t value, std::string_view format, const std::string& path) {
    Error bad = make_error(Errc::kParse, path + ": unrecognised format '" + std::string(format) + "'");
    std::string_view rest = format;
    uint64_t* word = field(next_item(rest, ':'));
    if (!word) return bad;  // also config3 (Linux 6.3+), which EventSpec cannot carry
    std::vector<std::pair<unsigned, unsigned>> ranges;
    unsigned width = 0;
    while (!rest.empty()) {
      auto range = parse_range(next_item(rest, ','), 63);
      if (!range) return bad;
      ranges.emplace_back(static_cast<unsigned>(range->first), static_cast<unsigned>(range->second));
      width += ranges.back().second - ranges.back().first + 1;
    }
    if (ranges.empty() || width > 64) return bad;
    if (width < 64 && (value >> width) != 0) {
      return invalid("value " + hex(value) + " of term '" + std::string(name) + "' in '" + spec_.name +
                     "' does not fit in its " + std::to_string(width) + " bit" + (width == 1 ? "" : "s") + " (" +
                     std::string(format) + ")");
    }
    for (auto [lo, hi] : ranges) {
      unsigned w = hi - lo + 1;
      uint64_t mask = w == 64 ? ~uint64_t{0} : (uint64_t{1} << w) - 1;  // 1 << 64 is undefined
      *word = (*word & ~(mask << lo)) | ((value & mask) << lo);
      value = w == 64 ? 0 : value >> w;
    }
    return {};
  }

  Error unknown_term(std::string_view name) const {
    std::vector<std::string> known;
    if (auto names = list_dir(dir_ + "/format"); names.ok()) known = *names;
    if (auto names = list_dir(dir_ + "/events"); names.ok()) {
      for (std::string& n : *names) {
        if (!is_alias_side_file(n)) known.push_back(std::move(n));
      }
    }
    std::string list = join(std::move(known));
    return invalid("unknown term '" + std::string(name) + "' for PMU '" + spec_.pmu + "' in '" + spec_.name +
                   "' (it knows: " + (list.empty() ? "config, config1, config2" : list) + ")");
  }

  uint64_t* field(std::string_view name) {
    if (name == "config") return &spec_.config;
    if (name == "config1") return &spec_.config1;
    if (name == "config2") return &spec_.config2;
    return nullptr;
  }

  static std::string hex(uint64_t v) {
    char buf[19] = "0x";
    return std::string(buf, std::to_chars(buf + 2, buf + sizeof buf, v, 16).ptr);
  }

  void add_canonical(const std::string& term) { canonical_ += (canonical_.empty() ? "" : ",") + term; }

  std::string dir_;
  EventSpec& spec_;
  std::string canonical_;
};

std::string devices_dir(const std::string& sys_root) { return sys_root + "/bus/event_source/devices"; }

Result<EventSpec> parse_pmu(const std::string& sys_root, std::string_view text) {
  size_t first = text.find('/');
  size_t last = text.rfind('/');
  std::string pmu(trim(text.substr(0, first)));
  if (last == first) {
    return invalid("bad event '" + std::string(text) + "': write pmu/terms/, e.g. cpu/event=0x3c/");
  }
  if (last + 1 != text.size()) {
    return invalid("bad event '" + std::string(text) + "': modifiers after the last '/' ('" +
                   std::string(text.substr(last + 1)) + "') are not supported");
  }
  if (!is_plain_name(pmu)) return invalid("bad PMU name '" + pmu + "' in '" + std::string(text) + "'");

  EventSpec spec;
  spec.name = pmu + "/" + std::string(trim(text.substr(first + 1, last - first - 1))) + "/";
  spec.kind = EventKind::kPmu;
  spec.pmu = pmu;
  std::string dir = devices_dir(sys_root) + "/" + pmu;
  auto type = read_text(dir + "/type");
  if (!type) {
    if (type.error().code != Errc::kNotFound) return type.error();
    auto listed = list_dir(devices_dir(sys_root));
    std::string list = listed.ok() ? join(std::move(*listed)) : "";
    return invalid("unknown PMU '" + pmu + "' in '" + spec.name +
                   "' (this host has: " + (list.empty() ? "none" : list) + ")");
  }
  auto type_value = parse_u64(*type);
  if (!type_value || *type_value > UINT32_MAX) {
    return make_error(Errc::kParse, dir + "/type: not a PMU type: '" + *type + "'");
  }
  spec.type = static_cast<uint32_t>(*type_value);

  PmuParser parser(dir, spec);
  PM_TRY(parser.terms(text.substr(first + 1, last - first - 1), 0));
  spec.name = pmu + "/" + parser.canonical() + "/";

  // Only uncore-style PMUs publish a cpumask; without one the event opens on every CPU.
  if (auto mask = read_text(dir + "/cpumask"); mask.ok()) {
    auto cpus = pm::parse_cpu_list(*mask);
    if (!cpus) return make_error(Errc::kParse, dir + "/cpumask: bad CPU list '" + *mask + "'");
    spec.cpus = std::move(*cpus);
  }
  return spec;
}

}  // namespace

Result<EventSpec> Catalogue::parse(std::string_view text) const {
  text = trim(text);
  if (text.empty()) return invalid("empty event name");
  if (text.find('/') != std::string_view::npos) return parse_pmu(sys_root, text);
  if (text.find(':') != std::string_view::npos) {
    return invalid("bad event '" + std::string(text) + "': modifiers such as ':u' or ':k' are not supported");
  }

  std::string key = fold(text);
  for (const EventSpec& e : builtin_specs()) {
    if (key == fold(e.name)) return e;
  }
  for (const Generic& g : kGeneric) {
    if (g.alias && key == g.alias) return generic_spec(g);
  }

  // Raw events: 'r' + hex. A word with '-' or '_' is a misspelt name ("ref-cyclez"), not raw.
  if (text[0] == 'r' && std::all_of(text.begin(), text.end(), is_alnum)) {
    auto v = text.size() <= 17 ? parse_hex(text.substr(1)) : std::nullopt;
    if (!v) {
      return invalid("bad raw event '" + std::string(text) + "': write r followed by hex digits, e.g. r01c2");
    }
    EventSpec e;
    e.name = fold(text);  // r01C2 and r01c2 are one event
    e.kind = EventKind::kRaw;
    e.type = PERF_TYPE_RAW;
    e.config = *v;
    return e;
  }
  return unknown_event(text);
}

Result<std::vector<EventSpec>> Catalogue::parse_list(std::string_view text) const {
  std::vector<std::string> names;
  bool in_pmu = false;  // between a PMU's opening and closing '/'
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i < text.size() && text[i] == '/') in_pmu = !in_pmu;
    if (i < text.size() && (text[i] != ',' || in_pmu)) continue;
    std::string_view item = trim(text.substr(start, i - start));
    if (item.empty()) return invalid("empty event name in list '" + std::string(text) + "'");
    names.emplace_back(item);
    start = i + 1;
  }
  return parse_set(names);
}

Result<std::vector<EventSpec>> Catalogue::parse_set(const std::vector<std::string>& names) const {
  std::vector<EventSpec> out;
  for (const std::string& name : names) {
    auto e = parse(name);
    if (!e) return e.error();
    auto same_event = [&](const EventSpec& s) {
      return s.type == e->type && s.config == e->config && s.config1 == e->config1 && s.config2 == e->config2;
    };
    if (std::any_of(out.begin(), out.end(), same_event)) continue;
    std::string metric = metric_name(*e);
    for (const EventSpec& s : out) {
      if (metric_name(s) == metric) {
        return invalid("events '" + s.name + "' and '" + e->name + "' would both be reported as '" + metric +
                       "': leave one out");
      }
    }
    out.push_back(std::move(*e));
  }
  return out;
}

std::vector<EventSpec> Catalogue::all() const {
  std::vector<EventSpec> out = builtin_specs();
  auto pmus = list_dir(devices_dir(sys_root));
  if (!pmus) return out;
  std::sort(pmus->begin(), pmus->end());
  for (const std::string& pmu : *pmus) {
    auto aliases = list_dir(devices_dir(sys_root) + "/" + pmu + "/events");
    if (!aliases) continue;  // most PMUs (software, tracepoint) publish no aliases
    std::sort(aliases->begin(), aliases->end());
    for (const std::string& alias : *aliases) {
      if (is_alias_side_file(alias)) continue;
      // A listing skips an alias it cannot parse rather than hide every other event.
      std::string name = pmu;
      name.append("/").append(alias).append("/");
      if (auto e = parse(name); e.ok()) out.push_back(std::move(*e));
    }
  }
  return out;
}

std::vector<std::string> default_event_names(const Catalogue& catalogue) {
  std::vector<std::string> names = {
      "cycles",     "instructions",     "cache-references", "cache-misses", "branch-instructions", "branch-misses",
      "task-clock", "context-switches", "cpu-migrations",   "page-faults",  "minor-faults",        "major-faults",
  };
  auto aliases = list_dir(devices_dir(catalogue.sys_root) + "/power/events", "energy-");
  if (!aliases) return names;
  std::sort(aliases->begin(), aliases->end());
  for (const std::string& a : *aliases) {
    if (!is_alias_side_file(a)) names.push_back("power/" + a + "/");
  }
  return names;
}

std::string metric_name(const EventSpec& e) {
  std::string out;
  for (char c : e.name) {
    if (is_alnum(c)) {
      out += lower(c);
    } else if (!out.empty() && out.back() != '_') {
      out += '_';
    }
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out;
}

}  // namespace pm::counters
