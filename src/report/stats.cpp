// SPDX-License-Identifier: Apache-2.0
#include "report/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

namespace pm::report::stats {
namespace {

double normal_upper_tail(double z) { return 0.5 * std::erfc(z / std::sqrt(2.0)); }

// Tie-corrected variance of U under the null hypothesis.
double u_variance(std::span<const double> x, std::span<const double> y) {
  const double m = static_cast<double>(x.size()), n = static_cast<double>(y.size()), total = m + n;
  std::map<double, int> counts;
  for (double v : x) ++counts[v];
  for (double v : y) ++counts[v];
  double ties = 0;
  for (const auto& [v, t] : counts) ties += static_cast<double>(t) * t * t - t;
  if (total < 2) return 0;
  return m * n / 12.0 * ((total + 1) - ties / (total * (total - 1)));
}

bool use_exact(size_t m, size_t n, bool ties) {
  return !ties && static_cast<long>(m) * static_cast<long>(n) <= kExactMaxProduct;
}

}  // namespace

double median(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<long>(mid), v.end());
  double hi = v[mid];
  if (v.size() % 2 == 1) return hi;
  double lo = *std::max_element(v.begin(), v.begin() + static_cast<long>(mid));
  return (lo + hi) / 2;
}

std::vector<double> exact_u_distribution(int m, int n) {
  // Look at the largest of the m + n values: an x (probability i/(i+j)) adds no pair, a y
  // (probability j/(i+j)) is above all i x's and adds i. Only sums of positive terms, so the
  // tails stay exact to the last bits.
  std::vector<std::vector<double>> prev(static_cast<size_t>(m) + 1), cur(static_cast<size_t>(m) + 1);
  for (int j = 0; j <= n; ++j) {
    for (int i = 0; i <= m; ++i) {
      std::vector<double>& d = cur[static_cast<size_t>(i)];
      d.assign(static_cast<size_t>(i) * static_cast<size_t>(j) + 1, 0.0);
      if (i == 0 || j == 0) {
        d[0] = 1;
        continue;
      }
      const double px = static_cast<double>(i) / (i + j), py = static_cast<double>(j) / (i + j);
      const std::vector<double>& a = cur[static_cast<size_t>(i) - 1];  // (i-1, j)
      const std::vector<double>& b = prev[static_cast<size_t>(i)];     // (i, j-1)
      for (size_t u = 0; u < a.size(); ++u) d[u] += px * a[u];
      for (size_t u = 0; u < b.size(); ++u) d[u + static_cast<size_t>(i)] += py * b[u];
    }
    std::swap(prev, cur);
  }
  return prev[static_cast<size_t>(m)];
}

UTest mann_whitney(std::span<const double> x, std::span<const double> y) {
  UTest t;
  const size_t m = x.size(), n = y.size();
  if (m == 0 || n == 0) return t;
  for (double a : x) {
    for (double b : y) {
      if (b > a) {
        t.u += 1;
      } else if (b == a) {
        t.u += 0.5;
        t.ties = true;
      }
    }
  }
  if (!t.ties) {
    std::vector<double> all(x.begin(), x.end());
    all.insert(all.end(), y.begin(), y.end());
    std::sort(all.begin(), all.end());
    t.ties = std::adjacent_find(all.begin(), all.end()) != all.end();
  }
  const double mn = static_cast<double>(m) * static_cast<double>(n);
  if (use_exact(m, n, t.ties)) {
    std::vector<double> d = exact_u_distribution(static_cast<int>(m), static_cast<int>(n));
    auto u = static_cast<size_t>(t.u);
    double below = std::accumulate(d.begin(), d.begin() + static_cast<long>(u) + 1, 0.0);  // P(U <= u)
    double above = std::accumulate(d.begin() + static_cast<long>(u), d.end(), 0.0);        // P(U >= u)
    t.p = std::min(1.0, 2 * std::min(below, above));
    t.exact = true;
    return t;
  }
  double var = u_variance(x, y);
  if (var <= 0) {
    t.p = 1;  // every value the same
    return t;
  }
  double z = std::max(0.0, std::fabs(t.u - mn / 2) - 0.5) / std::sqrt(var);
  t.p = std::min(1.0, 2 * normal_upper_tail(z));
  return t;
}

Shift hodges_lehmann(std::span<const double> x, std::span<const double> y, double alpha) {
  Shift s;
  const size_t m = x.size(), n = y.size();
  if (m == 0 || n == 0) return s;
  std::vector<double> d;
  d.reserve(m * n);
  for (double a : x) {
    for (double b : y) d.push_back(b - a);
  }
  std::sort(d.begin(), d.end());
  s.estimate = median(d);
  // [D(k), D(mn+1-k)] covers the shift with probability 1 - 2 P(U <= k-1) (Moses).
  bool ties = false;
  {
    std::vector<double> all(x.begin(), x.end());
    all.insert(all.end(), y.begin(), y.end());
    std::sort(all.begin(), all.end());
    ties = std::adjacent_find(all.begin(), all.end()) != all.end();
  }
  const double mn = static_cast<double>(m * n);
  long k = 0;
  if (use_exact(m, n, ties)) {
    std::vector<double> dist = exact_u_distribution(static_cast<int>(m), static_cast<int>(n));
    double cdf = 0;
    for (size_t u = 0; u < dist.size(); ++u) {
      if (cdf + dist[u] > alpha / 2) break;
      cdf += dist[u];
      k = static_cast<long>(u) + 1;
    }
    s.confidence = 1 - 2 * cdf;
  } else {
    double sd = std::sqrt(u_variance(x, y));
    k = static_cast<long>(std::floor(mn / 2 + 0.5 - normal_upper_quantile(alpha / 2) * sd));
    s.confidence = 1 - alpha;
  }
  if (k >= 1 && static_cast<size_t>(k) <= d.size()) {
    s.low = d[static_cast<size_t>(k) - 1];
    s.high = d[d.size() - static_cast<size_t>(k)];
    s.bounded = true;
  } else {
    s.confidence = 0;
  }
  return s;
}

std::vector<double> holm(const std::vector<double>& p) {
  const size_t m = p.size();
  std::vector<size_t> order(m);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p[a] < p[b]; });
  std::vector<double> adj(m);
  double running = 0;
  for (size_t r = 0; r < m; ++r) {
    running = std::max(running, std::min(1.0, static_cast<double>(m - r) * p[order[r]]));
    adj[order[r]] = running;
  }
  return adj;
}

std::vector<double> benjamini_hochberg(const std::vector<double>& p) {
  const size_t m = p.size();
  std::vector<size_t> order(m);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p[a] < p[b]; });
  std::vector<double> adj(m);
  double running = 1;
  for (size_t r = m; r-- > 0;) {
    running = std::min(running, std::min(1.0, static_cast<double>(m) / static_cast<double>(r + 1) * p[order[r]]));
    adj[order[r]] = running;
  }
  return adj;
}

double normal_upper_quantile(double q) {
  double lo = -40, hi = 40;
  for (int i = 0; i < 200; ++i) {
    double mid = (lo + hi) / 2;
    if (normal_upper_tail(mid) > q) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return (lo + hi) / 2;
}

}  // namespace pm::report::stats
