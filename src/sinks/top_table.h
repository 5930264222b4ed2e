// SPDX-License-Identifier: Apache-2.0
// The top lists (core/top.h) as tables: one set of columns, headers and number formats shared by
// the text output (every column, one table per list) and the interactive view (the columns that
// fit the terminal's width). Figures are per second of the interval; a figure that cannot be had
// is "n/a", never 0.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/text.h"  // printable(), for the users of these tables
#include "core/top.h"

namespace pm {

enum class TopList { kProcesses, kCgroups, kThreads };

// One row to lay out: a process (or thread) or a cgroup.
struct TopRow {
  const TopProcess* process = nullptr;
  const TopCgroup* cgroup = nullptr;
  std::string tree;  // the tree view: the indent before its name (" \\_ " under its parent, as ps f)
};

struct TopColumn {
  const char* title;
  int width;                    // characters; the last column of a table takes what is left (at least this)
  bool left;                    // aligned left (names, paths: cut keeping their end), else right (numbers)
  int priority;                 // the view keeps low numbers first when the terminal is narrow
  std::optional<TopSort> sort;  // the column the sort key orders by (always kept)
  std::string (*cell)(const TopRow& row, double seconds);
};

// The columns of a list, in the order shown.
const std::vector<TopColumn>& top_columns(TopList list);

// The columns that fit `width` characters (separated by one space): by priority, the sort key's
// own always; in display order. The last one is the list's name column, stretched to fill: the
// command line (COMMAND) where `command`, else the name the process gave itself (COMM).
std::vector<const TopColumn*> fit_top_columns(TopList list, int width, TopSort sort, bool command = false);

// A header or a row laid out over the chosen columns. width < 0: no limit (the last column in
// full); else the line is exactly `width` characters.
std::string top_header(const std::vector<const TopColumn*>& cols, int width);
std::string top_line(const std::vector<const TopColumn*>& cols, const TopRow& row, double seconds, int width);

// Compact figures for narrow columns: "0", "512", "4.0K", "12M", "1.2G" (bytes, powers of
// 1024); "987", "4.5k", "12k", "1.2M" (counts); "12.3" (percent); "850ns", "42us", "3.1ms".
// A value that rounds to zero is "0" (or "0.0"), never "-0.0".
std::string short_bytes(double bytes);
std::string short_count(double n);
std::string short_percent(double pct);
std::string short_time(double seconds);

// The text output's tables: every list the record has, with every column, under a line that
// says what they are ("top      processes by cpu: 214 processes, the first 10").
std::string top_tables_text(const TopRecord& top);

}  // namespace pm
