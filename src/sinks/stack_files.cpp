// SPDX-License-Identifier: Apache-2.0
#include "sinks/stack_files.h"

#include <unistd.h>

#include <cerrno>
#include <map>
#include <unordered_map>
#include <vector>

#include "core/safe_file.h"
#include "sinks/gzip.h"
#include "sinks/protobuf_wire.h"

namespace pm {

uint64_t folded_value(const StackProfile::Entry& e, StackKind kind) {
  return kind == StackKind::kOnCpu ? e.value : e.value / 1000;
}

std::string folded_stacks(const StackProfile& p, StackKind kind) {
  std::string out;
  for (const StackProfile::Entry& e : kind == StackKind::kOnCpu ? p.on_cpu : p.off_cpu) {
    uint64_t v = folded_value(e, kind);
    if (v == 0) continue;
    bool first = true;
    for (const std::string& f : e.frames) {
      if (!first) out += ';';
      first = false;
      // ';' separates frames, and the last space the value: a name keeps its spaces, and its
      // semicolons (a C++ or Rust name has none) become ':'.
      for (char c : f) out += c == ';' ? ':' : c;
    }
    out += ' ';
    out += std::to_string(v);
    out += '\n';
  }
  return out;
}

namespace {

void packed(std::string& out, uint32_t field, const std::vector<uint64_t>& values) {
  std::string body;
  for (uint64_t v : values) wire::varint(body, v);
  wire::bytes_field(out, field, body);
}
void uint_field(std::string& out, uint32_t field, uint64_t v) {
  wire::key(out, field, 0);
  wire::varint(out, v);
}

struct Strings {
  std::unordered_map<std::string, uint64_t> index{{"", 0}};
  std::vector<std::string> table{""};
  uint64_t of(const std::string& s) {
    auto [it, fresh] = index.emplace(s, table.size());
    if (fresh) table.push_back(s);
    return it->second;
  }
};

std::string value_type(Strings& st, const char* type, const char* unit) {
  std::string m;
  uint_field(m, 1, st.of(type));
  uint_field(m, 2, st.of(unit));
  return m;
}

}  // namespace

// profile.proto (github.com/google/pprof): Profile 1 sample_type, 2 sample, 4 location,
// 5 function, 6 string_table, 9 time_nanos, 10 duration_nanos, 11 period_type, 12 period;
// Sample 1 location_id (leaf first), 2 value; Location 1 id, 4 line; Line 1 function_id, 2 line;
// Function 1 id, 2 name, 3 system_name, 4 filename.
// A function is a frame's name in a file; a location, a frame at one line of it (as `perf` and Go
// write them: `pprof -lines` and `-list` show the lines, the default view sums each function).
std::string pprof_profile(const StackProfile& p, StackKind kind) {
  Strings st;
  std::string out;
  bool on = kind == StackKind::kOnCpu;
  // The last sample type is what a reader shows first: CPU time, or time off the CPU.
  if (on) {
    wire::bytes_field(out, 1, value_type(st, "samples", "count"));
    wire::bytes_field(out, 1, value_type(st, "cpu", "nanoseconds"));
  } else {
    wire::bytes_field(out, 1, value_type(st, "switches", "count"));
    wire::bytes_field(out, 1, value_type(st, "off_cpu", "nanoseconds"));
  }
  // The lists told apart by line where the source gave them; else the stacks by name.
  const std::vector<StackProfile::Entry>& lined = on ? p.on_cpu_lines : p.off_cpu_lines;
  const std::vector<StackProfile::Entry>& entries = !lined.empty() ? lined : on ? p.on_cpu : p.off_cpu;
  std::map<std::pair<std::string, std::string>, uint64_t> function_ids;  // (name, file) -> id
  std::map<std::pair<uint64_t, uint32_t>, uint64_t> location_ids;       // (function, line) -> id
  std::string functions, locations;
  static const SourceLine kNone;
  for (const StackProfile::Entry& e : entries) {
    if (e.value == 0) continue;
    std::vector<uint64_t> ids;
    for (size_t i = e.frames.size(); i-- > 0;) {
      const std::string& name = e.frames[i];
      const SourceLine& line = i < e.lines.size() ? e.lines[i] : kNone;
      auto [fn, fresh_fn] = function_ids.emplace(std::pair{name, line.file}, function_ids.size() + 1);
      if (fresh_fn) {
        std::string f;
        uint_field(f, 1, fn->second);
        uint_field(f, 2, st.of(name));
        uint_field(f, 3, st.of(name));
        if (!line.file.empty()) uint_field(f, 4, st.of(line.file));
        wire::bytes_field(functions, 5, f);
      }
      auto [loc, fresh_loc] = location_ids.emplace(std::pair{fn->second, line.line}, location_ids.size() + 1);
      if (fresh_loc) {
        std::string l;
        uint_field(l, 1, fn->second);
        if (line.line != 0) uint_field(l, 2, line.line);
        std::string body;
        uint_field(body, 1, loc->second);
        wire::bytes_field(body, 4, l);
        wire::bytes_field(locations, 4, body);
      }
      ids.push_back(loc->second);
    }
    std::string sample;
    packed(sample, 1, ids);
    if (on) {
      packed(sample, 2, {e.value, e.value * p.period_ns});
    } else {
      packed(sample, 2, {e.count, e.value});
    }
    wire::bytes_field(out, 2, sample);
  }
  out += locations;
  out += functions;
  std::string period_type = on ? value_type(st, "cpu", "nanoseconds") : value_type(st, "off_cpu", "nanoseconds");
  for (const std::string& s : st.table) wire::bytes_field(out, 6, s);
  uint_field(out, 9, p.start_unix_ns);
  uint_field(out, 10, p.duration_ns);
  wire::bytes_field(out, 11, period_type);
  uint_field(out, 12, on ? p.period_ns : 1);
  return out;
}

bool is_pprof_path(std::string_view path) {
  return path.ends_with(".pb.gz") || path.ends_with(".pb") || path.ends_with(".pprof");
}

Status write_stack_file(const StackProfile& p, StackKind kind, const std::string& path, OutputFile& file) {
  std::string body = is_pprof_path(path) ? gzip(pprof_profile(p, kind)) : folded_stacks(p, kind);
  size_t done = 0;
  while (done < body.size()) {
    ssize_t n = ::write(file.fd(), body.data() + done, body.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Error::from_errno(errno, "writing " + path);
    done += static_cast<size_t>(n);
  }
  return file.commit();
}

}  // namespace pm
