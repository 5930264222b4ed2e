// SPDX-License-Identifier: Apache-2.0
// The text output is laid out by the sources themselves. Each source has a TextLayout function
// beside its MetricDescs (MetricDesc::text); it finds its metrics in a TextBlock by descriptor —
// never by a string, so a renamed metric cannot silently drop a line — and adds the words a person
// reads to a section's line. The text sink makes one block per record, calls each layout once,
// and prints the sections; a value that no layout showed is printed generically, so nothing that
// was read ever disappears from the text. A figure that was not read is left out or shown as
// "n/a", never as 0.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/metric.h"

namespace pm {

// One series of one record, as a layout sees it.
struct Shown {
  const MetricDesc* desc = nullptr;
  const Labels* labels = nullptr;
  double value = 0;                  // counter: increase in the interval, or total over the run; gauge: latest
  double rate = 0;                   // counter: per second (over the interval, or the run)
  double min = 0, max = 0;           // gauge: extrema over the interval or the run; NaN if never read
  double count = 0;                  // histogram: values counted
  double p50 = 0, p90 = 0, p99 = 0;  // histogram: quantiles (upper bucket bounds; NaN when empty)
  bool derived = false;              // a ratio the core computed
  bool max_lower_bound = false;      // summary gauge: max is a lower bound (shown as "≥")
  bool shown = false;
};

// Where sections go in a block, top to bottom: the target (run, attach) first, then the system.
namespace text_order {
inline constexpr int kTree = 100, kProbe = 200, kPmc = 300, kEnergy = 350;
inline constexpr int kSystem = 400;  // from here on: the system (run/attach summaries say so)
inline constexpr int kCpu = 400, kSched = 500, kBlock = 600, kMemory = 700, kPaging = 750, kPressure = 800, kNuma = 900,
                     kThermal = 1000, kSelf = 1100;
}  // namespace text_order

class TextBlock {
 public:
  TextBlock(bool summary, double seconds) : summary_(summary), seconds_(seconds) {}
  TextBlock(const TextBlock&) = delete;
  TextBlock& operator=(const TextBlock&) = delete;

  // The sink's side: the record's values, then render() after the layouts ran.
  void add(Shown v);
  void reserve(size_t values) { values_.reserve(values); }

  // True for the run's summary (values are run totals and extrema), false for an interval.
  [[nodiscard]] bool summary() const { return summary_; }
  [[nodiscard]] double seconds() const { return seconds_; }

  // The series of d's quantity (its family and name: the series of another source that measures
  // the same quantity count too) whose labels include every pair of `want`, not shown yet;
  // nullptr when it was not read. Marks it shown.
  const Shown* take(const MetricDesc& d, const Labels& want = {});
  // Every such series not shown yet, in the order they were read; marks them shown.
  std::vector<const Shown*> take_all(const MetricDesc& d);
  // Every value of the family not shown yet whose descriptor has this layout (descriptors made
  // at run time: counter events). Marks them shown.
  std::vector<const Shown*> take_all(TextLayout layout, std::string_view family);
  // Whether d's quantity was read (shown or not).
  [[nodiscard]] bool has(const MetricDesc& d) const;

  // An item of a section's line ("sched", "switches 972/s"): items of one section, from every
  // layout, share one line, in `order`. Sections appear in the order of their lowest entry.
  void item(int order, std::string_view section, std::string text);
  // A line of its own in the section (a device, a zone): under the items, label not repeated.
  void line(int order, std::string_view section, std::string text);

  // The sink's side.
  [[nodiscard]] std::vector<TextLayout> layouts() const;  // each once, higher ranks first
  [[nodiscard]] std::string render(int from_order, int to_order) const;
  [[nodiscard]] std::vector<const Shown*> unshown() const;
  [[nodiscard]] bool any_section(int from_order, int to_order) const;

 private:
  struct Entry {
    int order;
    std::string section;
    std::string text;
    bool own_line;
  };
  // The values of one quantity (family, name), in the order they were added; those before
  // `first` are shown. A thousand cgroups' series are looked up among their own, not among all.
  struct Quantity {
    std::vector<size_t> at;
    size_t first = 0;
  };
  Quantity* quantity(const MetricDesc& d);
  bool summary_;
  double seconds_;
  std::vector<Shown> values_;
  std::map<std::pair<std::string_view, std::string_view>, Quantity> quantities_;
  std::unordered_map<const MetricDesc*, Quantity*> by_desc_;  // each descriptor's, once found
  std::vector<Entry> entries_;
};

// The value of a series' label ("" when it has none of that name).
std::string_view label_of(const Shown& v, std::string_view key);

// A counter for people: in an interval its rate ("4821/s"), over a run its total and rate
// ("48210 (4821/s)"); `bytes` formats both as sizes.
std::string counted(const TextBlock& b, const Shown& v, bool bytes = false);
// A gauge for people: in an interval its latest value, over a run "LAST (max MAX)"; `fmt` formats a
// value (human_bytes, human_count, ...).
std::string level(const TextBlock& b, const Shown& v, std::string (*fmt)(double));

// Units for people. Every one prints "n/a" for a NaN (a figure that was not read).
std::string human_bytes(double bytes);   // "256.0 MiB"
std::string human_time(double seconds);  // "850 ns", "42 us", "3.1 ms", "182 ms", "2.50 s"
std::string human_count(double v);       // "4821"
std::string percent(double v);           // "12.5%" (never "-0.0%")
// Time per second in a state (seconds per second): how many tasks were in it on average, "0.80".
std::string tasks_on_average(double seconds_per_second);
// A histogram's quantile, an upper bucket bound: "< 64 us"; "-" when nothing was counted.
std::string below_time(double seconds);
// Per second: "1.2 MiB/s", "4821/s".
std::string bytes_per_s(double bytes_per_second);
std::string per_s(double per_second);

}  // namespace pm
