// SPDX-License-Identifier: Apache-2.0
#include "core/aggregator.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <string_view>
#include <utility>

namespace pm {

double log2_quantile(const std::vector<uint64_t>& buckets, double q, double base) {
  uint64_t total = bucket_total(buckets);
  if (total == 0) return std::numeric_limits<double>::quiet_NaN();
  double rank = q * static_cast<double>(total);
  uint64_t seen = 0;
  for (size_t i = 0; i < buckets.size(); ++i) {
    seen += buckets[i];
    if (static_cast<double>(seen) >= rank) return base * std::ldexp(1.0, static_cast<int>(i));
  }
  return base * std::ldexp(1.0, static_cast<int>(buckets.size()) - 1);
}

Aggregator::Aggregator() = default;

size_t Aggregator::hash_of(const MetricDesc* d, const Labels& labels) {
  // The descriptor's address identifies the metric: descriptors are statics.
  size_t h = std::hash<const void*>{}(d);
  auto mix = [&h](std::string_view s) {
    h ^= std::hash<std::string_view>{}(s) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  };
  for (const auto& [k, v] : labels) {
    mix(k);
    mix(v);
  }
  return h;
}

size_t Aggregator::find(const MetricDesc* d, const Labels& labels, size_t hash) const {
  auto [from, to] = index_.equal_range(hash);
  for (auto it = from; it != to; ++it) {
    const Series& s = series_[it->second];
    if (s.desc == d && s.labels == labels) return it->second;
  }
  return kNone;
}

Aggregator::Series& Aggregator::series_for(const Sample& s) {
  // Sources read their series in the same order every time: the series after the last one found
  // is the likely one, and is checked before any hashing (a thousand cgroups' series are looked
  // up in order, not at random in the index).
  if (next_ < series_.size() && series_[next_].desc == s.desc && series_[next_].labels == s.labels) {
    return series_[next_++];
  }
  size_t hash = hash_of(s.desc, s.labels);
  if (size_t at = find(s.desc, s.labels, hash); at != kNone) {
    next_ = at + 1;
    return series_[at];
  }
  next_ = series_.size() + 1;
  ++shape_;
  index_.emplace(hash, series_.size());
  Series n{s.desc, s.labels};
  auto [slot, fresh] = slot_of_.try_emplace(s.desc, descs_.size());
  if (fresh) descs_.push_back(s.desc);
  n.slot = slot->second;
  n.first = n.last = n.at_close = s.value;
  n.run_min = n.run_max = s.value;
  n.observed = !std::isnan(s.value);  // a peak alone is no observation
  n.first_buckets = n.last_buckets = n.close_buckets = s.buckets;
  series_.push_back(std::move(n));
  return series_.back();
}

void Aggregator::observe_baseline(const Samples& samples, MonoClock::time_point now) {
  start(now);
  for (const Sample& s : samples) {
    bool is_new = find(s.desc, s.labels, hash_of(s.desc, s.labels)) == kNone;
    Series& ser = series_for(s);
    if (is_new && s.desc->kind == MetricKind::kGauge) {
      ser.observed = false;
      ++shape_;
    }
    if (is_new && s.desc->transient) ser.in_run = false;
  }
}

void Aggregator::start(MonoClock::time_point now) {
  if (started_) return;
  started_ = true;
  start_mono_ = last_close_ = now;
  start_wall_ = WallClock::now();
}

void Aggregator::observe(const Samples& samples, MonoClock::time_point now) {
  start(now);
  for (const Sample& s : samples) {
    Series& ser = series_for(s);
    ser.floor = std::max(ser.floor, s.peak);
    ser.max_lower_bound = s.max_lower_bound;
    if (std::isnan(s.value)) continue;  // only a peak: the gauge was not read
    ser.in_run = true;
    if (!ser.observed) {
      ++shape_;
      ser.observed = true;
      ser.first = ser.last = ser.run_min = ser.run_max = s.value;
    }
    if (ser.desc->kind == MetricKind::kCounter && s.value < ser.last) {
      // A counter that went backwards was reset (wrapped or restarted): keep what it had counted.
      double lost = ser.last - s.value;
      ser.first -= lost;
      ser.at_close -= lost;
    }
    ser.last = s.value;
    if (!s.buckets.empty()) ser.last_buckets = s.buckets;
    ser.run_min = std::min(ser.run_min, s.value);
    ser.run_max = std::max(ser.run_max, s.value);
    if (!ser.iv_seen) {
      ser.iv_min = ser.iv_max = s.value;
      ser.iv_seen = true;
    } else {
      ser.iv_min = std::min(ser.iv_min, s.value);
      ser.iv_max = std::max(ser.iv_max, s.value);
    }
  }
}

namespace {

bool labels_subset(const Labels& small, const Labels& big) {
  return std::all_of(small.begin(), small.end(),
                     [&](const auto& kv) { return std::find(big.begin(), big.end(), kv) != big.end(); });
}

std::vector<uint64_t> bucket_delta(const std::vector<uint64_t>& now, const std::vector<uint64_t>& then) {
  std::vector<uint64_t> d(now.size());
  for (size_t i = 0; i < now.size(); ++i) {
    uint64_t before = i < then.size() ? then[i] : 0;
    d[i] = now[i] >= before ? now[i] - before : now[i];
  }
  return d;
}

}  // namespace

std::vector<bool> Aggregator::passed_on() const {
  if (passed_for_ == shape_) return passed_;
  // One quantity, one name: of the sources that measure it, the highest rank observed fills it.
  // Worked out per descriptor (a few hundred), then looked up per series by its descriptor's
  // slot (a thousand cgroups' series share a dozen descriptors).
  std::vector<char> seen(descs_.size());
  for (const Series& s : series_) seen[s.slot] = static_cast<char>(seen[s.slot] || s.observed);
  std::map<std::pair<std::string_view, std::string_view>, int> best;
  for (size_t i = 0; i < descs_.size(); ++i) {
    if (!seen[i]) continue;
    const MetricDesc* d = descs_[i];
    auto [it, inserted] = best.try_emplace({d->family, d->name}, d->rank);
    if (!inserted) it->second = std::max(it->second, d->rank);
  }
  std::vector<char> passes(descs_.size());
  for (size_t i = 0; i < descs_.size(); ++i) {
    const MetricDesc* d = descs_[i];
    auto it = best.find({d->family, d->name});
    passes[i] = static_cast<char>(!d->denominator && (it == best.end() || d->rank >= it->second));
  }
  std::vector<bool> out(series_.size());
  for (size_t i = 0; i < series_.size(); ++i) out[i] = passes[series_[i].slot] != 0;
  passed_ = out;
  passed_for_ = shape_;
  return out;
}

template <typename Delta>
std::vector<Aggregator::RatioValue> Aggregator::derive_ratios(Delta delta) const {
  std::vector<RatioValue> out;
  if (ratios_.empty()) return out;
  // The series of each descriptor a rule names, found in one pass (not one pass per rule and
  // numerator over every series: a thousand cgroups' series are none of them).
  std::unordered_map<const MetricDesc*, std::vector<const Series*>> of;
  for (const RatioRule& rule : ratios_) {
    of.try_emplace(rule.numerator);
    of.try_emplace(rule.denominator);
  }
  std::vector<std::vector<const Series*>*> by_slot(descs_.size(), nullptr);
  for (size_t i = 0; i < descs_.size(); ++i) {
    if (auto it = of.find(descs_[i]); it != of.end()) by_slot[i] = &it->second;
  }
  for (const Series& s : series_) {
    if (by_slot[s.slot] != nullptr) by_slot[s.slot]->push_back(&s);
  }
  for (const RatioRule& rule : ratios_) {
    const auto& dens = of[rule.denominator];
    for (const Series* num : of[rule.numerator]) {
      for (const Series* den : dens) {
        if (!labels_subset(den->labels, num->labels)) continue;
        double d = delta(*den);
        if (d > 0) out.push_back({rule.out, num, rule.scale * delta(*num) / d});
        break;
      }
    }
  }
  return out;
}

void Aggregator::forget_gone() {
  auto gone = [](const Series& s) { return s.desc->transient && !s.iv_seen; };
  if (std::none_of(series_.begin(), series_.end(), gone)) return;
  series_.erase(std::remove_if(series_.begin(), series_.end(), gone), series_.end());
  ++shape_;
  index_.clear();
  for (size_t i = 0; i < series_.size(); ++i) index_.emplace(hash_of(series_[i].desc, series_[i].labels), i);
}

IntervalRecord Aggregator::close_interval(MonoClock::time_point now) {
  forget_gone();
  IntervalRecord rec;
  rec.timestamp = WallClock::now();
  rec.seconds = std::chrono::duration<double>(now - last_close_).count();
  rec.values = std::move(spare_);
  rec.values.clear();
  rec.values.reserve(series_.size());
  std::vector<bool> passed = passed_on();
  for (size_t i = 0; i < series_.size(); ++i) {
    Series& s = series_[i];
    if (!s.observed || !passed[i] || (s.desc->transient && !s.iv_seen)) continue;
    IntervalValue v{s.desc, &s.labels};
    switch (s.desc->kind) {
      case MetricKind::kCounter:
        v.value = s.last - s.at_close;
        v.rate = rec.seconds > 0 ? v.value / rec.seconds : 0;
        v.total = s.last - s.first;
        break;
      case MetricKind::kGauge:
        v.value = s.last;
        v.min = s.iv_seen ? s.iv_min : s.last;
        v.max = s.iv_seen ? s.iv_max : s.last;
        break;
      case MetricKind::kHistogram:
        v.value = s.last - s.at_close;
        v.buckets = bucket_delta(s.last_buckets, s.close_buckets);
        v.p50 = log2_quantile(v.buckets, 0.5, s.desc->bucket_base);
        v.p90 = log2_quantile(v.buckets, 0.9, s.desc->bucket_base);
        v.p99 = log2_quantile(v.buckets, 0.99, s.desc->bucket_base);
        v.total = s.last - s.first;
        v.total_buckets = bucket_delta(s.last_buckets, s.first_buckets);
        break;
    }
    rec.values.push_back(std::move(v));
  }
  for (const RatioValue& r : derive_ratios([](const Series& s) { return s.last - s.at_close; })) {
    IntervalValue v{r.out, &r.numerator->labels};
    v.value = v.min = v.max = r.value;
    v.derived = true;
    rec.values.push_back(std::move(v));
  }
  for (Series& s : series_) {
    s.at_close = s.last;
    s.close_buckets = s.last_buckets;
    s.iv_seen = false;
  }
  last_close_ = now;
  return rec;
}

void Aggregator::reuse(IntervalRecord&& done) {
  spare_ = std::move(done.values);
  spare_.clear();
}

SummaryRecord Aggregator::summary(MonoClock::time_point now) const {
  SummaryRecord rec;
  rec.start = start_wall_;
  rec.end = WallClock::now();
  rec.seconds = started_ ? std::chrono::duration<double>(now - start_mono_).count() : 0;
  std::vector<bool> passed = passed_on();
  for (size_t i = 0; i < series_.size(); ++i) {
    const Series& s = series_[i];
    if (!passed[i] || !s.in_run) continue;
    SummaryValue v{s.desc, &s.labels};
    v.value = s.desc->kind == MetricKind::kGauge ? s.last : s.last - s.first;
    v.min = s.run_min;
    v.max = std::max(s.run_max, s.floor);
    v.max_lower_bound = s.max_lower_bound;
    if (!s.observed) {
      v.value = v.min = std::numeric_limits<double>::quiet_NaN();
      v.max = s.floor > 0 ? s.floor : std::numeric_limits<double>::quiet_NaN();
    }
    if (s.desc->kind == MetricKind::kHistogram) {
      v.buckets = bucket_delta(s.last_buckets, s.first_buckets);
      v.p50 = log2_quantile(v.buckets, 0.5, s.desc->bucket_base);
      v.p90 = log2_quantile(v.buckets, 0.9, s.desc->bucket_base);
      v.p99 = log2_quantile(v.buckets, 0.99, s.desc->bucket_base);
    }
    rec.values.push_back(std::move(v));
  }
  for (const RatioValue& r : derive_ratios([](const Series& s) { return s.last - s.first; })) {
    SummaryValue v{r.out, &r.numerator->labels};
    v.value = v.min = v.max = r.value;
    v.derived = true;
    rec.values.push_back(std::move(v));
  }
  return rec;
}

}  // namespace pm
