//! Distribution-free statistics for benchmark samples.
//!
//! Timings are skewed and heavy-tailed (a run that hits a page-cache miss or a
//! preemption is much slower, never much faster), so everything here is built on
//! medians, order statistics and ranks rather than means and standard deviations.

/// Median of a sample (mean of the two middle values for an even count).
/// Panics on an empty sample: every caller has at least one run.
pub fn median(values: &[f64]) -> f64 {
    assert!(!values.is_empty(), "median of an empty sample");
    let sorted = sorted_copy(values);
    median_of_sorted(&sorted)
}

fn median_of_sorted(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

fn sorted_copy(values: &[f64]) -> Vec<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted
}

/// P(X <= k) for X ~ Binomial(n, 1/2), summed in log space so large n does not underflow.
pub fn binomial_half_cdf(n: usize, k: usize) -> f64 {
    if k >= n {
        return 1.0;
    }
    let ln_half_pow_n = -(n as f64) * std::f64::consts::LN_2;
    let mut ln_choose = 0.0_f64; // ln C(n, 0)
    let mut total = 0.0;
    for i in 0..=k {
        if i > 0 {
            ln_choose += ((n - i + 1) as f64).ln() - (i as f64).ln();
        }
        total += (ln_choose + ln_half_pow_n).exp();
    }
    total.min(1.0)
}

/// A confidence interval together with the coverage it actually achieves:
/// order-statistic intervals only exist at discrete levels.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Interval {
    pub low: f64,
    pub high: f64,
    pub level: f64,
}

/// Distribution-free confidence interval for the median: [x(k), x(n-k+1)] with the
/// largest k whose coverage 1 - 2 P(Bin(n, 1/2) <= k-1) still reaches `confidence`.
/// When even [min, max] falls short (n < 6 at 95%), [min, max] is returned with its
/// lower achieved level.
pub fn median_ci(values: &[f64], confidence: f64) -> Interval {
    assert!(!values.is_empty(), "confidence interval of an empty sample");
    let sorted = sorted_copy(values);
    let n = sorted.len();
    let coverage = |k: usize| 1.0 - 2.0 * binomial_half_cdf(n, k - 1);
    let mut k = 1;
    while k < n.div_ceil(2) && coverage(k + 1) >= confidence {
        k += 1;
    }
    Interval {
        low: sorted[k - 1],
        high: sorted[n - k],
        level: if n == 1 { 0.0 } else { coverage(k) },
    }
}

/// Ratio of two paired samples as the median of the per-pair log ratios, with the
/// order-statistic interval of that median. Pairing each variant run with the
/// baseline run next to it cancels slow drift of the machine.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RatioEstimate {
    pub ratio: f64,
    pub ci: Interval,
}

pub fn paired_ratio(baseline: &[f64], variant: &[f64], confidence: f64) -> RatioEstimate {
    assert_eq!(
        baseline.len(),
        variant.len(),
        "paired samples differ in length"
    );
    let log_ratios: Vec<f64> = baseline
        .iter()
        .zip(variant)
        .map(|(b, v)| (v / b).ln())
        .collect();
    let ci = median_ci(&log_ratios, confidence);
    RatioEstimate {
        ratio: median(&log_ratios).exp(),
        ci: Interval {
            low: ci.low.exp(),
            high: ci.high.exp(),
            level: ci.level,
        },
    }
}

/// Result of a two-sided Mann-Whitney U test of `a` against `b`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MannWhitney {
    /// Pairs (a_i, b_j) with a_i > b_j, ties counting one half.
    pub u: f64,
    pub p_value: f64,
    /// Rank-biserial correlation in [-1, 1]: +1 when every b exceeds every a,
    /// -1 when every a exceeds every b.
    pub effect_size: f64,
    pub exact: bool,
}

/// Largest group size for which the exact null distribution is enumerated.
const EXACT_LIMIT: usize = 30;

pub fn mann_whitney(a: &[f64], b: &[f64]) -> MannWhitney {
    assert!(
        !a.is_empty() && !b.is_empty(),
        "Mann-Whitney needs two non-empty samples"
    );
    let (n1, n2) = (a.len(), b.len());
    let mut pooled: Vec<(f64, bool)> = a
        .iter()
        .map(|&x| (x, true))
        .chain(b.iter().map(|&x| (x, false)))
        .collect();
    pooled.sort_by(|x, y| x.0.total_cmp(&y.0));

    // Average ranks over ties; remember tie group sizes for the variance correction.
    let mut rank_sum_a = 0.0;
    let mut tie_correction = 0.0;
    let mut i = 0;
    while i < pooled.len() {
        let mut j = i;
        while j + 1 < pooled.len() && pooled[j + 1].0 == pooled[i].0 {
            j += 1;
        }
        let average_rank = (i + j) as f64 / 2.0 + 1.0;
        let group = (j - i + 1) as f64;
        tie_correction += group * group * group - group;
        rank_sum_a += pooled[i..=j].iter().filter(|p| p.1).count() as f64 * average_rank;
        i = j + 1;
    }
    let u = rank_sum_a - (n1 * (n1 + 1)) as f64 / 2.0;
    let pairs = (n1 * n2) as f64;
    let effect_size = 1.0 - 2.0 * u / pairs;

    let has_ties = tie_correction > 0.0;
    let (p_value, exact) = if !has_ties && n1 <= EXACT_LIMIT && n2 <= EXACT_LIMIT {
        (exact_two_sided_p(n1, n2, u.round() as usize), true)
    } else {
        let n = (n1 + n2) as f64;
        let mean = pairs / 2.0;
        let variance = pairs / 12.0 * ((n + 1.0) - tie_correction / (n * (n - 1.0)));
        let p = if variance <= 0.0 {
            1.0
        } else {
            let z = ((u - mean).abs() - 0.5).max(0.0) / variance.sqrt();
            erfc(z / std::f64::consts::SQRT_2)
        };
        (p.min(1.0), false)
    };
    MannWhitney {
        u,
        p_value,
        effect_size,
        exact,
    }
}

/// Exact two-sided p-value of U = `u` under the null with no ties, by counting the
/// arrangements with each U: f(i, j)(u) = f(i-1, j)(u - j) + f(i, j-1)(u), splitting
/// on whether the largest value belongs to the first group.
fn exact_two_sided_p(n1: usize, n2: usize, u: usize) -> f64 {
    let mut previous: Vec<Vec<f64>> = vec![vec![1.0]; n2 + 1]; // i = 0: one arrangement, U = 0
    for i in 1..=n1 {
        let mut current: Vec<Vec<f64>> = Vec::with_capacity(n2 + 1);
        current.push(vec![1.0]); // j = 0: U = 0
        for j in 1..=n2 {
            let mut counts = vec![0.0; i * j + 1];
            for (k, &c) in previous[j].iter().enumerate() {
                counts[k + j] += c;
            }
            for (k, &c) in current[j - 1].iter().enumerate() {
                counts[k] += c;
            }
            current.push(counts);
        }
        previous = current;
    }
    let counts = &previous[n2];
    let total: f64 = counts.iter().sum();
    let lower: f64 = counts[..=u].iter().sum::<f64>() / total;
    let upper: f64 = counts[u..].iter().sum::<f64>() / total;
    (2.0 * lower.min(upper)).min(1.0)
}

/// Complementary error function (Numerical Recipes `erfcc`, relative error < 1.2e-7).
pub fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let result = t * poly.exp();
    if x >= 0.0 { result } else { 2.0 - result }
}

/// Indices of outliers by the modified z-score 0.6745 (x - median) / MAD > 3.5
/// (Iglewicz and Hoaglin). Outliers are reported, never removed.
pub fn outlier_indices(values: &[f64]) -> Vec<usize> {
    if values.len() < 3 {
        return Vec::new();
    }
    let center = median(values);
    let deviations: Vec<f64> = values.iter().map(|x| (x - center).abs()).collect();
    let mut scale = median(&deviations) / 0.6745;
    if scale == 0.0 {
        // More than half the runs are identical: fall back to the mean absolute
        // deviation, scaled to match a normal distribution's standard deviation.
        scale = deviations.iter().sum::<f64>() / values.len() as f64 * 1.253_314;
    }
    if scale == 0.0 {
        return Vec::new();
    }
    values
        .iter()
        .enumerate()
        .filter(|(_, x)| ((*x - center) / scale).abs() > 3.5)
        .map(|(i, _)| i)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SplitMix64: a tiny deterministic generator so the tests are reproducible.
    struct Rng(u64);
    impl Rng {
        fn next_u64(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }
        fn uniform(&mut self) -> f64 {
            ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        }
        fn exponential(&mut self, mean: f64) -> f64 {
            -mean * self.uniform().ln()
        }
        fn normal(&mut self) -> f64 {
            (-2.0 * self.uniform().ln()).sqrt() * (std::f64::consts::TAU * self.uniform()).cos()
        }
    }

    #[test]
    fn median_of_odd_and_even_samples() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
    }

    #[test]
    fn binomial_cdf_matches_exact_fractions() {
        assert!((binomial_half_cdf(10, 1) - 11.0 / 1024.0).abs() < 1e-12);
        assert!((binomial_half_cdf(10, 2) - 56.0 / 1024.0).abs() < 1e-12);
        assert!((binomial_half_cdf(5, 0) - 1.0 / 32.0).abs() < 1e-12);
        assert_eq!(binomial_half_cdf(4, 4), 1.0);
        // Symmetry around n/2 holds for large n too (no underflow at n = 3000).
        assert!((binomial_half_cdf(3001, 1500) - 0.5).abs() < 1e-9);
    }

    #[test]
    fn median_ci_picks_the_textbook_order_statistics() {
        let values: Vec<f64> = (1..=10).map(f64::from).collect();
        // n = 10 at 95%: [x(2), x(9)] with coverage 1 - 2 * 11/1024.
        let ci = median_ci(&values, 0.95);
        assert_eq!((ci.low, ci.high), (2.0, 9.0));
        assert!((ci.level - (1.0 - 22.0 / 1024.0)).abs() < 1e-12);
        // n = 5 cannot reach 95%: [min, max] at 1 - 2/32.
        let ci = median_ci(&[5.0, 1.0, 3.0, 2.0, 4.0], 0.95);
        assert_eq!((ci.low, ci.high), (1.0, 5.0));
        assert!((ci.level - 0.9375).abs() < 1e-12);
    }

    #[test]
    fn median_ci_covers_the_true_median_of_a_skewed_distribution() {
        // Exponential with mean 1 has median ln 2; check coverage over many samples.
        let mut rng = Rng(7);
        let true_median = std::f64::consts::LN_2;
        let trials = 4000;
        let mut covered = 0;
        let mut nominal = 0.0;
        for _ in 0..trials {
            let sample: Vec<f64> = (0..25).map(|_| rng.exponential(1.0)).collect();
            let ci = median_ci(&sample, 0.95);
            nominal = ci.level;
            if ci.low <= true_median && true_median <= ci.high {
                covered += 1;
            }
        }
        let coverage = covered as f64 / trials as f64;
        assert!(nominal >= 0.95);
        assert!(
            (coverage - nominal).abs() < 0.02,
            "coverage {coverage} vs {nominal}"
        );
    }

    #[test]
    fn paired_ratio_recovers_a_known_ratio_under_drift() {
        // Baseline log-normal around 20 ms, variant exactly twice as slow with its own
        // noise, and both drifting upwards by 30% over the session.
        let mut rng = Rng(11);
        let n = 20;
        let (mut baseline, mut variant) = (Vec::new(), Vec::new());
        for i in 0..n {
            let drift = 1.0 + 0.3 * i as f64 / n as f64;
            baseline.push(20e6 * drift * (0.02 * rng.normal()).exp());
            variant.push(40e6 * drift * (0.02 * rng.normal()).exp());
        }
        let estimate = paired_ratio(&baseline, &variant, 0.95);
        assert!((estimate.ratio - 2.0).abs() < 0.03, "{estimate:?}");
        assert!(
            estimate.ci.low <= 2.0 && 2.0 <= estimate.ci.high,
            "{estimate:?}"
        );
        assert!(estimate.ci.high / estimate.ci.low < 1.1, "{estimate:?}");
    }

    #[test]
    fn mann_whitney_exact_p_values_match_tables() {
        // Complete separation of 3 vs 3: 2 / C(6,3) = 0.1; of 5 vs 5: 2 / C(10,5).
        let r = mann_whitney(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]);
        assert!(r.exact);
        assert!((r.p_value - 0.1).abs() < 1e-12);
        assert_eq!(r.u, 0.0);
        assert_eq!(r.effect_size, 1.0);
        let r = mann_whitney(&[6.0, 7.0, 8.0, 9.0, 10.0], &[1.0, 2.0, 3.0, 4.0, 5.0]);
        assert!((r.p_value - 2.0 / 252.0).abs() < 1e-12);
        assert_eq!(r.effect_size, -1.0);
        // U = 1 of 3 vs 3: P(U <= 1) = 2/20, two-sided 0.2.
        let r = mann_whitney(&[1.0, 2.0, 4.0], &[3.0, 5.0, 6.0]);
        assert_eq!(r.u, 1.0);
        assert!((r.p_value - 0.2).abs() < 1e-12);
    }

    #[test]
    fn mann_whitney_normal_approximation_agrees_with_exact_and_handles_ties() {
        // Exact and approximate p for the same interleaved 30 vs 30 samples agree.
        let a: Vec<f64> = (0..30).map(|i| (2 * i) as f64).collect();
        let b: Vec<f64> = (0..30).map(|i| (2 * i + 5) as f64).collect();
        let exact = mann_whitney(&a, &b);
        let a_tied: Vec<f64> = a.iter().chain(&[1000.0]).copied().collect();
        let b_tied: Vec<f64> = b.iter().chain(&[1000.0]).copied().collect();
        let approx = mann_whitney(&a_tied, &b_tied);
        assert!(exact.exact && !approx.exact);
        assert!(
            (exact.p_value - approx.p_value).abs() < 0.05,
            "{exact:?} {approx:?}"
        );
        // All values tied: no evidence at all.
        let r = mann_whitney(&[1.0; 40], &[1.0; 40]);
        assert_eq!(r.p_value, 1.0);
        assert_eq!(r.effect_size, 0.0);
    }

    #[test]
    fn mann_whitney_has_the_right_false_positive_rate_and_power() {
        let mut rng = Rng(3);
        let trials = 2000;
        let mut false_positives = 0;
        let mut detected = 0;
        for _ in 0..trials {
            let a: Vec<f64> = (0..40).map(|_| rng.exponential(1.0)).collect();
            let same: Vec<f64> = (0..40).map(|_| rng.exponential(1.0)).collect();
            let slower: Vec<f64> = (0..40).map(|_| rng.exponential(3.0)).collect();
            if mann_whitney(&a, &same).p_value < 0.05 {
                false_positives += 1;
            }
            if mann_whitney(&a, &slower).p_value < 0.05 {
                detected += 1;
            }
        }
        let rate = false_positives as f64 / trials as f64;
        assert!((0.03..0.07).contains(&rate), "false positive rate {rate}");
        assert!(
            detected as f64 / trials as f64 > 0.9,
            "power {detected}/{trials}"
        );
    }

    #[test]
    fn erfc_matches_known_values() {
        assert!((erfc(0.0) - 1.0).abs() < 1e-7);
        assert!((erfc(1.0) - 0.157_299_207).abs() < 1e-7);
        assert!((erfc(-1.0) - 1.842_700_793).abs() < 1e-7);
        assert!((erfc(1.959_963_985 / std::f64::consts::SQRT_2) - 0.05).abs() < 1e-7);
    }

    #[test]
    fn outliers_are_flagged_by_index() {
        let mut values = vec![10.0, 10.2, 9.9, 10.1, 10.0, 9.8, 10.3];
        assert!(outlier_indices(&values).is_empty());
        values.push(25.0);
        values.push(2.0);
        assert_eq!(outlier_indices(&values), vec![7, 8]);
        // Mostly identical values still flag the one far away.
        assert_eq!(outlier_indices(&[5.0, 5.0, 5.0, 5.0, 50.0]), vec![4]);
    }
}
