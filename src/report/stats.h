// SPDX-License-Identifier: Apache-2.0
// The statistics of `report --compare`: the Mann-Whitney U test on per-run figures (exact
// without ties, the normal approximation with tie and continuity correction otherwise), the
// Hodges-Lehmann shift with its distribution-free confidence interval (Moses), and Holm's and
// Benjamini-Hochberg's corrections for testing many figures at once.
#pragma once

#include <span>
#include <vector>

namespace pm::report::stats {

double median(std::vector<double> v);  // NaN when empty

// P(U = u) for u = 0..m*n, U the Mann-Whitney statistic of samples of sizes m and n without
// ties under the null hypothesis (every arrangement of the m+n values equally likely).
std::vector<double> exact_u_distribution(int m, int n);
// Largest sample sizes for which the exact distribution is used (m * n at most this).
inline constexpr int kExactMaxProduct = 2500;

struct UTest {
  double u = 0;        // pairs (x, y) with y > x, plus half the pairs with y == x
  double p = 1;        // two-sided
  bool exact = false;  // from the exact distribution (no ties), else the normal approximation
  bool ties = false;
};
// Two-sided test of x against y. Needs at least one value on each side.
UTest mann_whitney(std::span<const double> x, std::span<const double> y);

struct Shift {
  double estimate = 0;       // Hodges-Lehmann: the median of every y_j - x_i
  double low = 0, high = 0;  // the confidence interval, when bounded
  bool bounded = false;      // false when the samples are too small for this confidence
  double confidence = 0;     // achieved (exact) or nominal (approximation)
};
// The shift of y against x with a 1 - alpha confidence interval.
Shift hodges_lehmann(std::span<const double> x, std::span<const double> y, double alpha);

// Adjusted p-values, in the order given.
std::vector<double> holm(const std::vector<double>& p);
std::vector<double> benjamini_hochberg(const std::vector<double>& p);

// The standard normal's upper-tail quantile: z with P(Z > z) = q.
double normal_upper_quantile(double q);

}  // namespace pm::report::stats
