// SPDX-License-Identifier: Apache-2.0
#include "sources/files/powercap.h"

#include <chrono>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/file_reader.h"
#include "core/labels.h"
#include "core/text.h"
#include "core/text_layout.h"

namespace pm {

namespace {
// At the top a total stays there: a running total never goes backwards, whatever the files say.
uint64_t saturating_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }
}  // namespace

uint64_t WrappingCounter::update(uint64_t raw) {
  // A wrap passed the wrap point once: the total grows by (wrap - last) + raw. max_seen_ is at
  // most range_ for a sane counter; taking the larger keeps a bogus reading from going backwards.
  if (started_ && raw < last_) offset_ = saturating_add(offset_, std::max(range_, max_seen_));
  started_ = true;
  last_ = raw;
  max_seen_ = std::max(max_seen_, raw);
  return saturating_add(offset_, raw);
}

namespace {

void energy_text(TextBlock& b);

const MetricDesc kEnergy = shown_by(energy_text, {"energy", "powercap_joules", MetricKind::kCounter, Unit::kJoules,
                                                  "Energy of the powercap zone (RAPL), wrap-around handled"});
const MetricDesc kElapsed = denominator_only({"energy", "elapsed_seconds", MetricKind::kCounter, Unit::kSeconds,
                                              "Wall-clock time the zones have been read: the denominator of watts"});
const MetricDesc kWatts = shown_by(
    energy_text, {"energy", "powercap_watts", MetricKind::kGauge, Unit::kNone, "Average power of the powercap zone"});

// energy   package-0 12.50 J (12.5 W)  dram 1.20 J (1.2 W)
void energy_text(TextBlock& b) {
  int at = text_order::kEnergy + 10;
  for (const Shown* j : b.take_all(kEnergy)) {
    std::string zone(label_of(*j, "zone"));
    const Shown* w = b.take(kWatts, {{"zone", zone}});
    b.item(at++, "energy",
           fmt::format("{} {:.2f} J{}", zone, j->value, w != nullptr ? fmt::format(" ({:.2f} W)", w->value) : ""));
  }
}

constexpr std::string_view kRaplPrefix = "intel-rapl:";

struct Zone {
  std::string dir;  // e.g. "intel-rapl:0:0"
  std::string energy_path;
  std::string label;
  WrappingCounter counter;
};

class PowercapSource final : public Source {
 public:
  explicit PowercapSource(std::vector<Zone> zones) : zones_(std::move(zones)) {}
  [[nodiscard]] std::string_view name() const override { return "powercap"; }
  [[nodiscard]] std::vector<RatioRule> ratios() const override { return {{&kWatts, &kEnergy, &kElapsed, 1.0}}; }

  void collect(Samples& out) override {
    for (Zone& zone : zones_) {
      auto text = reader_.read(zone.energy_path);
      if (!text) continue;
      auto raw = parse_u64(trim(*text));
      if (!raw) continue;
      out.push_back({&kEnergy, {{"zone", zone.label}}, static_cast<double>(zone.counter.update(*raw)) / 1e6});
    }
    out.push_back({&kElapsed, {}, std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count()});
  }

 private:
  std::vector<Zone> zones_;
  FileReader reader_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace

std::optional<PowercapZone> parse_powercap_zone(std::string_view dir, std::string_view energy_uj,
                                                std::optional<std::string_view> max_energy_range_uj,
                                                std::optional<std::string_view> name) {
  std::optional<uint64_t> raw = parse_u64(trim(energy_uj));
  if (!raw) return std::nullopt;
  PowercapZone z;
  z.energy_uj = *raw;
  if (max_energy_range_uj) z.range_uj = parse_u64(trim(*max_energy_range_uj)).value_or(0);
  z.label = name && !trim(*name).empty() ? std::string(trim(*name)) : std::string(dir);
  return z;
}

std::vector<std::string> powercap_labels(const std::vector<std::string>& names, const std::vector<std::string>& dirs) {
  std::vector<std::string> suffixes;
  for (const std::string& d : dirs) {
    std::string_view suffix = d;
    if (suffix.substr(0, kRaplPrefix.size()) == kRaplPrefix) suffix.remove_prefix(kRaplPrefix.size());
    suffixes.emplace_back(suffix);
  }
  return unique_labels(names, suffixes);
}

Result<std::unique_ptr<Source>> make_powercap_source(const FsRoots& roots) {
  const std::string dir = roots.sys + "/class/powercap";
  const std::string none = "no powercap energy counters under " + dir + " (no RAPL here)";
  auto entries = list_dir(dir);
  if (!entries) {
    return make_error(Errc::kUnavailable, entries.error().code == Errc::kNotFound ? none : entries.error().message);
  }
  // intel-rapl:0, then its subzones intel-rapl:0:0, ..., then intel-rapl:1.
  std::sort(entries->begin(), entries->end());

  FileReader reader;
  std::vector<Zone> zones;
  std::string denied;  // the first energy_uj we may not read
  for (const std::string& entry : *entries) {
    const std::string base = dir + "/" + entry + "/";
    std::string energy_path = base + "energy_uj";
    auto energy = reader.read(energy_path);
    if (!energy) {
      // ENOENT: not a zone (the control type dir "intel-rapl", a dtpm zone); EACCES: not root.
      if (energy.error().code == Errc::kPermissionDenied && denied.empty()) denied = energy_path;
      continue;
    }
    std::string energy_text(*energy);  // the reader's buffer is reused below
    auto range = reader.read(base + "max_energy_range_uj");
    std::optional<std::string> range_text = range ? std::optional<std::string>(*range) : std::nullopt;
    auto name = reader.read(base + "name");
    auto z = parse_powercap_zone(entry, energy_text, range_text,
                                 name ? std::optional<std::string_view>(*name) : std::nullopt);
    if (!z) continue;
    zones.push_back({entry, std::move(energy_path), std::move(z->label), WrappingCounter(z->range_uj)});
    zones.back().counter.update(z->energy_uj);  // the baseline: a wrap before the first collect still counts
  }
  if (zones.empty()) {
    if (!denied.empty()) return make_error(Errc::kUnavailable, "permission denied reading " + denied + ": run as root");
    return make_error(Errc::kUnavailable, none);
  }
  std::vector<std::string> names, dirs;
  for (const Zone& z : zones) {
    names.push_back(z.label);
    dirs.push_back(z.dir);
  }
  std::vector<std::string> labels = powercap_labels(names, dirs);
  for (size_t i = 0; i < zones.size(); ++i) zones[i].label = std::move(labels[i]);
  return std::unique_ptr<Source>(std::make_unique<PowercapSource>(std::move(zones)));
}

}  // namespace pm
