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
#include "core/text.h"
#include "core/text_layout.h"

namespace pm {

uint64_t WrappingCounter::update(uint64_t raw) {
  // A wrap passed the wrap point once: the total grows by (wrap - last) + raw. max_seen_ is at
  // most range_ for a sane counter; taking the larger keeps a bogus reading from going backwards.
  if (started_ && raw < last_) offset_ += std::max(range_, max_seen_);
  started_ = true;
  last_ = raw;
  max_seen_ = std::max(max_seen_, raw);
  return offset_ + raw;
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

// Zones are labelled by their name file ("package-0", "core", "dram"); a name that occurs more
// than once gets the dir's number appended ("core.0:0", "core.1:0"), or the whole dir name when
// it is not an intel-rapl zone ("package-0.intel-rapl-mmio:0"), so series never merge.
void make_labels_unique(std::vector<Zone>& zones) {
  std::vector<std::string> names;
  for (const Zone& z : zones) names.push_back(z.label);
  for (Zone& z : zones) {
    if (std::count(names.begin(), names.end(), z.label) < 2) continue;
    std::string_view suffix = z.dir;
    if (suffix.substr(0, kRaplPrefix.size()) == kRaplPrefix) suffix.remove_prefix(kRaplPrefix.size());
    z.label += "." + std::string(suffix);
  }
}

}  // namespace

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
    std::optional<uint64_t> raw = parse_u64(trim(*energy));
    if (!raw) continue;
    uint64_t range = 0;
    if (auto text = reader.read(base + "max_energy_range_uj")) range = parse_u64(trim(*text)).value_or(0);
    std::string label = entry;
    if (auto text = reader.read(base + "name"); text && !trim(*text).empty()) label = std::string(trim(*text));
    zones.push_back({entry, std::move(energy_path), std::move(label), WrappingCounter(range)});
    zones.back().counter.update(*raw);  // the baseline: a wrap before the first collect still counts
  }
  if (zones.empty()) {
    if (!denied.empty()) return make_error(Errc::kUnavailable, "permission denied reading " + denied + ": run as root");
    return make_error(Errc::kUnavailable, none);
  }
  make_labels_unique(zones);
  return std::unique_ptr<Source>(std::make_unique<PowercapSource>(std::move(zones)));
}

}  // namespace pm
