// SPDX-License-Identifier: Apache-2.0
// The statistics of `report --compare` against independent truths: the published table of the
// Mann-Whitney U distribution, enumeration of every arrangement, p-values computed by SciPy,
// and simulations of comparisons where nothing changed (A/A) and where something did.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "report/stats.h"

namespace pm::report::stats {
namespace {

double cdf(const std::vector<double>& d, int u) {
  double s = 0;
  for (int k = 0; k <= u && k < static_cast<int>(d.size()); ++k) s += d[static_cast<size_t>(k)];
  return s;
}

// Mann & Whitney (1947), Table I, and Siegel, "Nonparametric Statistics" (1956), Table J:
// P(U <= u) under the null hypothesis, to the three decimals printed there.
TEST(ExactDistribution, MatchesThePublishedTable) {
  struct Row {
    int m, n;
    std::vector<double> p;
  };
  const std::vector<Row> table{
      {3, 3, {.050, .100, .200, .350, .500}},
      {4, 4, {.014, .029, .057, .100, .171, .243, .343, .443, .557}},
      {5, 5, {.004, .008, .016, .028, .048, .075, .111, .155, .210, .274, .345, .421, .500}},
  };
  for (const Row& r : table) {
    std::vector<double> d = exact_u_distribution(r.m, r.n);
    ASSERT_EQ(d.size(), static_cast<size_t>(r.m * r.n + 1));
    for (size_t u = 0; u < r.p.size(); ++u) {
      EXPECT_NEAR(cdf(d, static_cast<int>(u)), r.p[u], 0.0005) << r.m << "x" << r.n << " U<=" << u;
    }
  }
}

// The usual table of critical values, two-sided alpha 0.05, equal sample sizes: the largest U
// with P(U <= U) <= 0.025.
TEST(ExactDistribution, CriticalValuesMatchTheTable) {
  const int critical[] = {2, 5, 8, 13, 17, 23, 30, 37, 45, 55, 64, 75, 87, 99, 113, 127};  // n = 5..20
  for (int n = 5; n <= 20; ++n) {
    std::vector<double> d = exact_u_distribution(n, n);
    int u = -1;
    while (cdf(d, u + 1) <= 0.025) ++u;
    EXPECT_EQ(u, critical[n - 5]) << "n = " << n;
  }
}

// Every way to place m x's among m + n ranks, counted: the distribution by enumeration.
std::vector<double> enumerate(int m, int n) {
  std::vector<double> counts(static_cast<size_t>(m * n) + 1, 0);
  std::vector<int> pick(static_cast<size_t>(m + n), 0);
  std::fill(pick.begin() + n, pick.end(), 1);  // 1 = an x
  double total = 0;
  do {
    int u = 0, ys_above = 0;
    for (int k = m + n - 1; k >= 0; --k) {  // from the largest rank down
      if (pick[static_cast<size_t>(k)] == 0) {
        ++ys_above;
      } else {
        u += ys_above;
      }
    }
    counts[static_cast<size_t>(u)] += 1;
    total += 1;
  } while (std::next_permutation(pick.begin(), pick.end()));
  for (double& c : counts) c /= total;
  return counts;
}

TEST(ExactDistribution, EqualsEnumerationOfEveryArrangement) {
  for (auto [m, n] :
       std::vector<std::pair<int, int>>{{1, 1}, {1, 5}, {2, 3}, {3, 7}, {6, 4}, {5, 5}, {7, 6}, {2, 12}}) {
    std::vector<double> d = exact_u_distribution(m, n), e = enumerate(m, n);
    ASSERT_EQ(d.size(), e.size());
    for (size_t u = 0; u < d.size(); ++u) EXPECT_NEAR(d[u], e[u], 1e-12) << m << "x" << n << " U=" << u;
    EXPECT_NEAR(std::accumulate(d.begin(), d.end(), 0.0), 1.0, 1e-12);
  }
}

// scipy.stats.mannwhitneyu(y, x, alternative="two-sided", method="exact"), SciPy 1.10.1.
TEST(MannWhitney, ExactPValuesMatchSciPy) {
  struct Case {
    std::vector<double> x, y;
    double u, p;
  };
  const std::vector<Case> cases{
      {{1, 2, 3, 4, 5}, {6, 7, 8, 9, 10}, 25, 0.007936507936507936},
      {{1, 3, 5, 7, 9}, {2, 4, 6, 8, 10}, 15, 0.6904761904761905},
      {{1.5, 2.25, 3.0}, {4.5, 0.5, 6.0, 7.5, 8.25, 9.0, 10.5, 11.0}, 21, 0.08484848484848484},
      {{3.1, 4.2, 5.3, 6.4}, {5.0, 6.1, 7.2, 8.3, 9.4, 2.0, 10.6, 11.7, 12.8}, 29, 0.1062937062937063},
      {{12.0, 15.5, 9.25, 11.0, 14.0, 10.5, 13.0}, {16.0, 8.0, 17.5, 18.0, 19.25, 20.0}, 35, 0.05128205128205128},
  };
  for (const Case& c : cases) {
    UTest t = mann_whitney(c.x, c.y);
    EXPECT_TRUE(t.exact);
    EXPECT_FALSE(t.ties);
    EXPECT_EQ(t.u, c.u);
    EXPECT_NEAR(t.p, c.p, 1e-12);
  }
}

// With ties: scipy.stats.mannwhitneyu(y, x, alternative="two-sided", method="asymptotic",
// use_continuity=True), SciPy 1.10.1: the normal approximation with tie correction.
TEST(MannWhitney, TiesUseTheNormalApproximationLikeSciPy) {
  struct Case {
    std::vector<double> x, y;
    double u, p;
  };
  const std::vector<Case> cases{
      {{1, 2, 2, 3, 3, 3, 4}, {3, 4, 4, 5, 5, 6, 7}, 45.5, 0.007659988586736321},
      {{0.25, 0.25, 0.26, 0.25, 0.27}, {0.5, 0.51, 0.5, 0.52, 0.5}, 25, 0.01017601224322355},
      {{10, 20, 20, 30, 40, 50}, {20, 30, 30, 60, 70}, 21, 0.30634143782771095},
      // Zero variance on each side, different values.
      {{5, 5, 5, 5, 5}, {6, 6, 6, 6, 6}, 25, 0.003976751709788651},
      // Zero variance, the same value everywhere: nothing to tell apart.
      {{7, 7, 7, 7}, {7, 7, 7, 7, 7}, 10, 1.0},
  };
  for (const Case& c : cases) {
    UTest t = mann_whitney(c.x, c.y);
    EXPECT_FALSE(t.exact);
    EXPECT_TRUE(t.ties);
    EXPECT_EQ(t.u, c.u);
    EXPECT_NEAR(t.p, c.p, 1e-12);
  }
}

TEST(MannWhitney, IsSymmetricAndHandlesOneValuePerSide) {
  std::vector<double> x{3, 9, 4, 12}, y{8, 15, 11, 20, 7};
  EXPECT_NEAR(mann_whitney(x, y).p, mann_whitney(y, x).p, 1e-15);
  EXPECT_EQ(mann_whitney(x, y).u + mann_whitney(y, x).u, 20);
  UTest one = mann_whitney(std::vector<double>{1}, std::vector<double>{2});
  EXPECT_EQ(one.p, 1.0);  // P(U >= 1) = 1/2, doubled
  EXPECT_EQ(mann_whitney(std::vector<double>{}, y).p, 1.0);
}

TEST(HodgesLehmann, MedianOfPairwiseDifferencesAndMosesInterval) {
  std::vector<double> x{10, 11, 12, 13, 14}, y{20, 21, 22, 23, 24};
  Shift s = hodges_lehmann(x, y, 0.05);
  EXPECT_EQ(s.estimate, 10);  // the 25 differences run 6..14, their median is 10
  // 5 vs 5 at alpha 0.05: the critical U is 2, so [D(3), D(23)] with confidence 1 - 2*4/252.
  std::vector<double> d;
  for (double a : x) {
    for (double b : y) d.push_back(b - a);
  }
  std::sort(d.begin(), d.end());
  ASSERT_TRUE(s.bounded);
  EXPECT_EQ(s.low, d[2]);
  EXPECT_EQ(s.high, d[22]);
  EXPECT_NEAR(s.confidence, 1 - 8.0 / 252, 1e-12);
  // 3 vs 3 cannot give a 95 % interval: P(U <= 0) = 0.05 > 0.025.
  EXPECT_FALSE(hodges_lehmann(std::vector<double>{1, 2, 3}, std::vector<double>{4, 5, 6}, 0.05).bounded);
  // Unequal counts, an even number of differences (-9 -8 -6 1 2 4): the mean of the middle two.
  EXPECT_EQ(hodges_lehmann(std::vector<double>{0, 10}, std::vector<double>{1, 2, 4}, 0.05).estimate, -2.5);
}

TEST(HodgesLehmann, IntervalCoversTheTrueShiftAsOftenAsItSays) {
  std::mt19937_64 rng(42);
  std::normal_distribution<double> noise(100, 5);
  const double shift = 7;
  int covered = 0, bounded = 0;
  const int reps = 2000;
  for (int r = 0; r < reps; ++r) {
    std::vector<double> x(6), y(6);
    for (double& v : x) v = noise(rng);
    for (double& v : y) v = noise(rng) + shift;
    Shift s = hodges_lehmann(x, y, 0.05);
    if (!s.bounded) continue;
    ++bounded;
    covered += s.low <= shift && shift <= s.high ? 1 : 0;
  }
  ASSERT_EQ(bounded, reps);
  // Achieved confidence for 6 vs 6 is 1 - 2 P(U <= 5) = 0.959; allow for sampling (sd 0.004).
  EXPECT_GE(static_cast<double>(covered) / reps, 0.945);
}

// Holm (1979) and Benjamini-Hochberg (1995), worked by hand: sorted p = .005 .01 .03 .04 .2 .5
// Holm: 6*.005=.03, 5*.01=.05, 4*.03=.12, 3*.04=.12 (running max), 2*.2=.4, 1*.5=.5.
// BH: .005*6/1=.03, .01*6/2=.03, .03*6/3=.06, .04*6/4=.06, .2*6/5=.24, .5 (running min from the top).
TEST(Corrections, HolmAndBenjaminiHochbergByHand) {
  std::vector<double> p{0.01, 0.04, 0.03, 0.005, 0.2, 0.5};
  std::vector<double> holm_adj = holm(p), bh_adj = benjamini_hochberg(p);
  std::vector<double> want_holm{0.05, 0.12, 0.12, 0.03, 0.4, 0.5}, want_bh{0.03, 0.06, 0.06, 0.03, 0.24, 0.5};
  for (size_t i = 0; i < p.size(); ++i) {
    EXPECT_NEAR(holm_adj[i], want_holm[i], 1e-12) << i;
    EXPECT_NEAR(bh_adj[i], want_bh[i], 1e-12) << i;
  }
  EXPECT_TRUE(holm({}).empty());
  EXPECT_EQ(holm({0.7})[0], 0.7);
  EXPECT_EQ(benjamini_hochberg({0.9, 0.9})[0], 0.9);
}

// A/A: both sides drawn from the same distribution. A test at level alpha may reject at most
// alpha of the time (5 vs 5 exact: at most 2 * P(U <= 2) = 0.032).
TEST(Simulation, AAComparisonsRejectNoMoreThanAlpha) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> runtime(0.0, 0.3);
  const int reps = 4000;
  int rejected = 0;
  for (int r = 0; r < reps; ++r) {
    std::vector<double> x(5), y(5);
    for (double& v : x) v = runtime(rng);
    for (double& v : y) v = runtime(rng);
    rejected += mann_whitney(x, y).p <= 0.05 ? 1 : 0;
  }
  double rate = static_cast<double>(rejected) / reps;
  EXPECT_LE(rate, 0.05);
  EXPECT_NEAR(rate, 2 * 4.0 / 252, 0.012);  // the test's exact size, within sampling error
  // Twenty figures per comparison, corrected: the family-wise rate stays below alpha too.
  int families_rejected = 0;
  for (int r = 0; r < 1000; ++r) {
    std::vector<double> ps;
    for (int f = 0; f < 20; ++f) {
      std::vector<double> x(9), y(9);
      for (double& v : x) v = runtime(rng);
      for (double& v : y) v = runtime(rng);
      ps.push_back(mann_whitney(x, y).p);
    }
    std::vector<double> bh = benjamini_hochberg(ps), hm = holm(ps);
    bool any = std::any_of(bh.begin(), bh.end(), [](double p) { return p <= 0.05; }) ||
               std::any_of(hm.begin(), hm.end(), [](double p) { return p <= 0.05; });
    families_rejected += any ? 1 : 0;
  }
  EXPECT_LE(families_rejected / 1000.0, 0.05);
}

// Ties everywhere (a figure read in whole clock ticks): the approximation stays conservative.
TEST(Simulation, AAWithManyTiesRejectsNoMoreThanAlpha) {
  std::mt19937_64 rng(11);
  std::binomial_distribution<int> ticks(6, 0.5);
  int rejected = 0;
  const int reps = 4000;
  for (int r = 0; r < reps; ++r) {
    std::vector<double> x(7), y(7);
    for (double& v : x) v = ticks(rng);
    for (double& v : y) v = ticks(rng);
    rejected += mann_whitney(x, y).p <= 0.05 ? 1 : 0;
  }
  EXPECT_LE(static_cast<double>(rejected) / reps, 0.05);
}

TEST(Simulation, TwiceTheWorkIsFoundWithFiveRunsPerSide) {
  std::mt19937_64 rng(3);
  std::normal_distribution<double> jitter(1.0, 0.05);
  int found = 0;
  for (int r = 0; r < 500; ++r) {
    std::vector<double> x(5), y(5);
    for (double& v : x) v = 0.25 * jitter(rng);
    for (double& v : y) v = 0.50 * jitter(rng);
    found += mann_whitney(x, y).p <= 0.05 ? 1 : 0;
  }
  EXPECT_EQ(found, 500);
}

TEST(Median, OddEvenEmpty) {
  EXPECT_EQ(median({3, 1, 2}), 2);
  EXPECT_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_TRUE(std::isnan(median({})));
}

TEST(NormalQuantile, KnownValues) {
  EXPECT_NEAR(normal_upper_quantile(0.025), 1.959963984540054, 1e-9);
  EXPECT_NEAR(normal_upper_quantile(0.5), 0, 1e-12);
}

}  // namespace
}  // namespace pm::report::stats
