// SPDX-License-Identifier: Apache-2.0
#include "core/text_layout.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

namespace pm {
namespace {

bool has_labels(const Labels& have, const Labels& want) {
  return std::all_of(want.begin(), want.end(),
                     [&](const auto& kv) { return std::find(have.begin(), have.end(), kv) != have.end(); });
}

}  // namespace

void TextBlock::add(Shown v) {
  Quantity*& q = by_desc_[v.desc];
  if (q == nullptr) q = &quantities_[{v.desc->family, v.desc->name}];
  q->at.push_back(values_.size());
  values_.push_back(std::move(v));
}

// One quantity, one name: the series of every source that measures d's quantity.
TextBlock::Quantity* TextBlock::quantity(const MetricDesc& d) {
  auto it = quantities_.find({d.family, d.name});
  if (it == quantities_.end()) return nullptr;
  Quantity& q = it->second;
  while (q.first < q.at.size() && values_[q.at[q.first]].shown) ++q.first;
  return &q;
}

const Shown* TextBlock::take(const MetricDesc& d, const Labels& want) {
  Quantity* q = quantity(d);
  for (size_t i = q != nullptr ? q->first : 0; q != nullptr && i < q->at.size(); ++i) {
    Shown& v = values_[q->at[i]];
    if (v.shown || !has_labels(*v.labels, want)) continue;
    v.shown = true;
    return &v;
  }
  return nullptr;
}

std::vector<const Shown*> TextBlock::take_all(const MetricDesc& d) {
  std::vector<const Shown*> out;
  Quantity* q = quantity(d);
  for (size_t i = q != nullptr ? q->first : 0; q != nullptr && i < q->at.size(); ++i) {
    Shown& v = values_[q->at[i]];
    if (v.shown) continue;
    v.shown = true;
    out.push_back(&v);
  }
  return out;
}

std::vector<const Shown*> TextBlock::take_all(TextLayout layout, std::string_view family) {
  std::vector<const Shown*> out;
  for (Shown& v : values_) {
    if (v.shown || v.desc->text != layout || v.desc->family != family) continue;
    v.shown = true;
    out.push_back(&v);
  }
  return out;
}

bool TextBlock::has(const MetricDesc& d) const { return quantities_.count({d.family, d.name}) != 0; }

void TextBlock::item(int order, std::string_view section, std::string text) {
  entries_.push_back({order, std::string(section), std::move(text), false});
}

void TextBlock::line(int order, std::string_view section, std::string text) {
  entries_.push_back({order, std::string(section), std::move(text), true});
}

std::vector<TextLayout> TextBlock::layouts() const {
  // A layout whose metrics outrank another source's goes first: it shows the quantity they share
  // (with its own details), and the other layout finds it taken.
  std::vector<std::pair<int, TextLayout>> found;
  for (const Shown& v : values_) {
    if (v.desc->text == nullptr) continue;
    auto it = std::find_if(found.begin(), found.end(), [&](const auto& f) { return f.second == v.desc->text; });
    if (it == found.end()) {
      found.emplace_back(v.desc->rank, v.desc->text);
    } else {
      it->first = std::max(it->first, v.desc->rank);
    }
  }
  std::stable_sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<TextLayout> out;
  for (const auto& f : found) out.push_back(f.second);
  return out;
}

bool TextBlock::any_section(int from_order, int to_order) const {
  return std::any_of(entries_.begin(), entries_.end(),
                     [&](const Entry& e) { return e.order >= from_order && e.order < to_order; });
}

std::string TextBlock::render(int from_order, int to_order) const {
  // Sections by their lowest entry; within one, items on the first line, then lines of their own.
  std::map<std::string, int> first;
  for (const Entry& e : entries_) {
    auto [it, inserted] = first.try_emplace(e.section, e.order);
    if (!inserted) it->second = std::min(it->second, e.order);
  }
  std::vector<std::pair<int, std::string>> sections;
  for (const auto& [name, order] : first) {
    if (order >= from_order && order < to_order) sections.emplace_back(order, name);
  }
  std::stable_sort(sections.begin(), sections.end());
  std::string s;
  for (const auto& [order, name] : sections) {
    std::vector<const Entry*> mine;
    for (const Entry& e : entries_) {
      if (e.section == name) mine.push_back(&e);
    }
    std::stable_sort(mine.begin(), mine.end(), [](const Entry* a, const Entry* b) { return a->order < b->order; });
    std::string items;
    for (const Entry* e : mine) {
      if (!e->own_line) items += (items.empty() ? "" : "  ") + e->text;
    }
    std::string label = fmt::format("{:<8} ", name);
    std::string indent(label.size(), ' ');
    bool first_line = true;
    if (!items.empty()) {
      s += label + items + "\n";
      first_line = false;
    }
    for (const Entry* e : mine) {
      if (!e->own_line) continue;
      s += (first_line ? label : indent) + e->text + "\n";
      first_line = false;
    }
  }
  return s;
}

std::vector<const Shown*> TextBlock::unshown() const {
  std::vector<const Shown*> out;
  for (const Shown& v : values_) {
    if (!v.shown) out.push_back(&v);
  }
  return out;
}

std::string_view label_of(const Shown& v, std::string_view key) {
  for (const auto& [k, val] : *v.labels) {
    if (k == key) return val;
  }
  return {};
}

std::string counted(const TextBlock& b, const Shown& v, bool bytes) {
  if (!b.summary()) return bytes ? bytes_per_s(v.rate) : per_s(v.rate);
  return bytes ? fmt::format("{} ({})", human_bytes(v.value), bytes_per_s(v.rate))
               : fmt::format("{} ({})", human_count(v.value), per_s(v.rate));
}

std::string level(const TextBlock& b, const Shown& v, std::string (*fmt)(double)) {
  if (!b.summary() || !std::isfinite(v.max) || v.max == v.value) return fmt(v.value);
  return fmt::format("{} (max {})", fmt(v.value), fmt(v.max));
}

std::string human_bytes(double bytes) {
  if (!std::isfinite(bytes)) return "n/a";
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = bytes;
  size_t u = 0;
  while (std::fabs(v) >= 1024 && u + 1 < std::size(kUnits)) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f} B", v) : fmt::format("{:.1f} {}", v, kUnits[u]);
}

std::string human_time(double seconds) {
  if (!std::isfinite(seconds)) return "n/a";
  double a = std::fabs(seconds);
  if (a == 0) return "0 s";
  if (a < 1e-6) return fmt::format("{:.0f} ns", seconds * 1e9);
  if (a < 1e-3) return fmt::format("{:.{}f} us", seconds * 1e6, a < 1e-5 ? 1 : 0);
  if (a < 1) return fmt::format("{:.{}f} ms", seconds * 1e3, a < 1e-2 ? 1 : 0);
  return fmt::format("{:.2f} s", seconds);
}

namespace {
// v rounded to `decimals` places, with a value that rounds to zero made +0: never "-0.0".
double rounded(double v, int decimals) {
  double scale = std::pow(10.0, decimals);
  double r = std::round(v * scale) / scale;
  return r == 0 ? 0.0 : r;
}
}  // namespace

std::string human_count(double v) {
  return std::isfinite(v) ? fmt::format("{:.0f}", rounded(v, 0)) : std::string("n/a");
}

std::string percent(double v) { return std::isfinite(v) ? fmt::format("{:.1f}%", rounded(v, 1)) : std::string("n/a"); }

std::string tasks_on_average(double seconds_per_second) {
  return std::isfinite(seconds_per_second) ? fmt::format("{:.2f}", rounded(seconds_per_second, 2)) : std::string("n/a");
}

std::string below_time(double seconds) { return std::isfinite(seconds) ? "< " + human_time(seconds) : "-"; }

std::string bytes_per_s(double bytes_per_second) {
  return std::isfinite(bytes_per_second) ? human_bytes(bytes_per_second) + "/s" : std::string("n/a");
}

std::string per_s(double per_second) {
  return std::isfinite(per_second) ? fmt::format("{:.0f}/s", rounded(per_second, 0)) : std::string("n/a");
}

}  // namespace pm
