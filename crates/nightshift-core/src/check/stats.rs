//! The statistics behind `probe` and the in-run determinism monitor: exact (Clopper–Pearson)
//! and Wilson upper bounds on a failure rate, the number of clean runs that bound it below a
//! target, and a sequential Wilson monitor fed by repeated checks of the same commit.
//!
//! Every bound here is **one-sided** at confidence `C`: "the true rate is below `u` with
//! confidence `C`". Zero failures in `n` runs bound the rate by `1 - (1 - C)^(1/n)`; at 95%
//! that is about `3/n` (the rule of three), so 299 clean runs bound it below 1%.

use std::collections::{BTreeMap, HashMap};

/// Checks that `rate` and `confidence` are proper probabilities (strictly between 0 and 1).
pub fn valid_probability(p: f64) -> bool {
    p.is_finite() && p > 0.0 && p < 1.0
}

/// P(X ≤ k) for X ~ Binomial(n, p), summed in log space (stable for n in the millions).
pub fn binomial_cdf(k: u64, n: u64, p: f64) -> f64 {
    if k >= n {
        return 1.0;
    }
    if p <= 0.0 {
        return 1.0;
    }
    if p >= 1.0 {
        return 0.0;
    }
    let (lp, lq) = (p.ln(), (-p).ln_1p());
    let mut ln_choose = 0.0_f64;
    let mut sum = 0.0_f64;
    for i in 0..=k {
        if i > 0 {
            ln_choose += ((n - i + 1) as f64).ln() - (i as f64).ln();
        }
        sum += (ln_choose + i as f64 * lp + (n - i) as f64 * lq).exp();
    }
    sum.min(1.0)
}

/// The exact one-sided Clopper–Pearson upper bound on a failure rate after `k` failures in `n`
/// runs, at `confidence`: the `p` with P(X ≤ k; n, p) = 1 − confidence. Found by bisection
/// (the CDF falls monotonically in `p`); 1.0 when `n` is 0 or every run failed.
pub fn clopper_pearson_upper(k: u64, n: u64, confidence: f64) -> f64 {
    if n == 0 || k >= n {
        return 1.0;
    }
    let alpha = 1.0 - confidence;
    if k == 0 {
        // Closed form: (1 - p)^n = alpha.
        return 1.0 - alpha.powf(1.0 / n as f64);
    }
    let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if binomial_cdf(k, n, mid) > alpha {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo < 1e-15 {
            break;
        }
    }
    hi
}

/// The fewest failure-free runs whose Clopper–Pearson upper bound is at or below `max_rate`
/// at `confidence` (1% at 95% → 299). `None` when the arguments are not probabilities.
pub fn runs_needed(max_rate: f64, confidence: f64) -> Option<u64> {
    if !valid_probability(max_rate) || !valid_probability(confidence) {
        return None;
    }
    let estimate = ((1.0 - confidence).ln() / (1.0 - max_rate).ln()).ceil();
    if !estimate.is_finite() || estimate > 1e12 {
        return None;
    }
    let mut n = (estimate as u64).max(1);
    // Guard the floating-point edge both ways: the smallest n that really satisfies it.
    while n > 1 && clopper_pearson_upper(0, n - 1, confidence) <= max_rate {
        n -= 1;
    }
    while clopper_pearson_upper(0, n, confidence) > max_rate {
        n += 1;
    }
    Some(n)
}

/// The standard normal quantile Φ⁻¹(p) for 0 < p < 1 (Acklam's rational approximation,
/// relative error below 1.2e-9).
pub fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    const LOW: f64 = 0.02425;
    if p <= 0.0 {
        return f64::NEG_INFINITY;
    }
    if p >= 1.0 {
        return f64::INFINITY;
    }
    if p < LOW {
        let q = (-2.0 * p.ln()).sqrt();
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    } else if p <= 1.0 - LOW {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    } else {
        let q = (-2.0 * (1.0 - p).ln()).sqrt();
        -(((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    }
}

/// The one-sided Wilson score bounds (lower, upper) on a rate after `k` events in `n` trials at
/// `confidence`; (0, 1) when `n` is 0.
pub fn wilson_bounds(k: u64, n: u64, confidence: f64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let z = normal_quantile(confidence);
    let n_f = n as f64;
    let p = k.min(n) as f64 / n_f;
    let z2 = z * z;
    let denom = 1.0 + z2 / n_f;
    let centre = (p + z2 / (2.0 * n_f)) / denom;
    let half = z / denom * (p * (1.0 - p) / n_f + z2 / (4.0 * n_f * n_f)).sqrt();
    let lower = if k == 0 {
        0.0
    } else {
        (centre - half).max(0.0)
    };
    let upper = if k >= n {
        1.0
    } else {
        (centre + half).min(1.0)
    };
    (lower, upper)
}

/// The one-sided Wilson score upper bound on a rate after `k` events in `n` trials.
pub fn wilson_upper(k: u64, n: u64, confidence: f64) -> f64 {
    wilson_bounds(k, n, confidence).1
}

/// The one-sided Wilson score lower bound on a rate after `k` events in `n` trials.
pub fn wilson_lower(k: u64, n: u64, confidence: f64) -> f64 {
    wilson_bounds(k, n, confidence).0
}

/// What the sequential monitor concludes after an observation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stability {
    /// Comparisons made: every check of a commit after its first.
    pub trials: u64,
    /// Checks that disagreed with their commit's majority verdict.
    pub disagreements: u64,
    /// Wilson lower bound on the flake rate at the monitor's confidence.
    pub flake_rate_lower: f64,
    /// Wilson upper bound on the flake rate at the monitor's confidence.
    pub flake_rate_upper: f64,
    /// The flake rate is above the target with the monitor's confidence: the check cannot be
    /// trusted (halt `check_not_deterministic`).
    pub untrusted: bool,
}

/// The in-run determinism monitor: every check of a commit that was already checked is a free
/// Bernoulli sample of the check's stability. Feed it each verdict (its fingerprint, e.g.
/// [`super::probe::Verdict::key`]) with the commit it judged; it says when the Wilson lower bound
/// on the flake rate rises above the target, i.e. when the check is flakier than tolerated with
/// the given confidence. One disagreement among few repeats is enough; one among thousands is
/// not.
#[derive(Debug, Clone)]
pub struct SequentialWilson {
    max_flake_rate: f64,
    confidence: f64,
    /// Per commit: how often each verdict was seen.
    commits: HashMap<String, BTreeMap<String, u64>>,
}

impl SequentialWilson {
    /// A monitor halting when the flake rate is above `max_flake_rate` at `confidence`.
    pub fn new(max_flake_rate: f64, confidence: f64) -> SequentialWilson {
        SequentialWilson {
            max_flake_rate,
            confidence,
            commits: HashMap::new(),
        }
    }

    /// Records one check of `commit` whose verdict fingerprint is `verdict`, and judges.
    pub fn observe(&mut self, commit: &str, verdict: &str) -> Stability {
        *self
            .commits
            .entry(commit.to_owned())
            .or_default()
            .entry(verdict.to_owned())
            .or_default() += 1;
        self.stability()
    }

    /// The judgement over everything observed so far.
    pub fn stability(&self) -> Stability {
        let (mut trials, mut disagreements) = (0_u64, 0_u64);
        for verdicts in self.commits.values() {
            let total: u64 = verdicts.values().sum();
            let majority = verdicts.values().copied().max().unwrap_or(0);
            trials += total.saturating_sub(1);
            disagreements += total - majority;
        }
        let (lower, upper) = wilson_bounds(disagreements, trials, self.confidence);
        Stability {
            trials,
            disagreements,
            flake_rate_lower: lower,
            flake_rate_upper: upper,
            untrusted: disagreements > 0 && lower > self.max_flake_rate,
        }
    }
}

/// A rate as a percentage rounded **up** to two significant digits, so that "below X" stays
/// true: 0.00997 → "1.0%", 0.0487 → "4.9%", 0.00017 → "0.017%".
pub fn percent_up(rate: f64) -> String {
    let pct = rate * 100.0;
    if !pct.is_finite() || pct <= 0.0 {
        return "0%".into();
    }
    let magnitude = pct.log10().floor() as i32;
    let decimals = (1 - magnitude).max(0) as usize;
    let scale = 10_f64.powi(decimals as i32);
    // A hair of tolerance so 1.0000000002% does not print as 1.1%.
    let rounded = ((pct * scale) - 1e-9).ceil() / scale;
    // 0.997 rounds up to 1.00: two significant digits of the rounded value are "1.0".
    let decimals = (1 - rounded.log10().floor() as i32).max(0) as usize;
    format!("{rounded:.decimals$}%")
}

/// A confidence as a plain percentage: 0.95 → "95%", 0.999 → "99.9%".
pub fn percent_plain(confidence: f64) -> String {
    let text = format!("{:.4}", confidence * 100.0);
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}%")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn one_percent_at_95_needs_299_clean_runs() {
        assert_eq!(runs_needed(0.01, 0.95), Some(299));
        assert!(clopper_pearson_upper(0, 299, 0.95) <= 0.01);
        assert!(clopper_pearson_upper(0, 298, 0.95) > 0.01);
        assert_eq!(runs_needed(0.05, 0.95), Some(59));
        assert_eq!(runs_needed(0.01, 0.99), Some(459));
        assert_eq!(runs_needed(0.1, 0.9), Some(22));
        assert_eq!(runs_needed(0.0, 0.95), None);
        assert_eq!(runs_needed(0.01, 1.0), None);
        assert_eq!(runs_needed(f64::NAN, 0.95), None);
    }

    #[test]
    fn clopper_pearson_matches_known_values() {
        // Zero failures: the closed form, about 3/n at 95% (rule of three).
        assert!(close(clopper_pearson_upper(0, 60, 0.95), 0.048_703, 1e-5));
        assert!(close(clopper_pearson_upper(0, 10, 0.95), 0.258_866, 1e-5));
        // k > 0: one-sided upper bounds (the Beta(k+1, n-k) quantile at C).
        assert!(close(clopper_pearson_upper(1, 10, 0.95), 0.394_163, 1e-5));
        assert!(close(clopper_pearson_upper(5, 100, 0.95), 0.102_253, 1e-5));
        assert!(close(clopper_pearson_upper(1, 300, 0.95), 0.015_715, 1e-5));
        assert_eq!(clopper_pearson_upper(3, 3, 0.95), 1.0);
        assert_eq!(clopper_pearson_upper(0, 0, 0.95), 1.0);
    }

    #[test]
    fn binomial_cdf_is_exact_on_small_cases() {
        assert!(close(binomial_cdf(0, 2, 0.5), 0.25, 1e-12));
        assert!(close(binomial_cdf(1, 2, 0.5), 0.75, 1e-12));
        assert!(close(binomial_cdf(2, 4, 0.5), 11.0 / 16.0, 1e-12));
    }

    #[test]
    fn normal_quantile_matches_tables() {
        assert!(close(normal_quantile(0.95), 1.644_853_6, 1e-6));
        assert!(close(normal_quantile(0.975), 1.959_964_0, 1e-6));
        assert!(close(normal_quantile(0.99), 2.326_347_9, 1e-6));
        assert!(close(normal_quantile(0.5), 0.0, 1e-9));
        assert!(close(normal_quantile(0.001), -3.090_232_3, 1e-6));
    }

    #[test]
    fn wilson_bounds_match_known_values() {
        // 0 of 10 at one-sided 95% (z = 1.645): upper = z²/(n+z²).
        let z2 = 1.644_853_6_f64.powi(2);
        assert!(close(wilson_upper(0, 10, 0.95), z2 / (10.0 + z2), 1e-6));
        assert_eq!(wilson_lower(0, 10, 0.95), 0.0);
        // 1 of 3 at one-sided 95%: (0.0783, 0.7465).
        let (lo, hi) = wilson_bounds(1, 3, 0.95);
        assert!(close(lo, 0.078_266, 1e-5), "{lo}");
        assert!(close(hi, 0.746_466, 1e-5), "{hi}");
        // 10 of 100 at one-sided 95%: (0.0607, 0.1604).
        let (lo, hi) = wilson_bounds(10, 100, 0.95);
        assert!(close(lo, 0.060_719, 1e-5), "{lo}");
        assert!(close(hi, 0.160_356, 1e-5), "{hi}");
        assert_eq!(wilson_bounds(0, 0, 0.95), (0.0, 1.0));
    }

    #[test]
    fn sequential_wilson_halts_on_early_disagreement_not_on_rare_noise() {
        let mut m = SequentialWilson::new(0.01, 0.95);
        let s = m.observe("c1", "green");
        assert_eq!((s.trials, s.disagreements, s.untrusted), (0, 0, false));
        let s = m.observe("c1", "green");
        assert_eq!((s.trials, s.disagreements, s.untrusted), (1, 0, false));
        // A second commit's first check is no comparison.
        let s = m.observe("c2", "red:abc");
        assert_eq!(s.trials, 1);
        let s = m.observe("c2", "green");
        assert_eq!((s.trials, s.disagreements), (2, 1));
        assert!(s.untrusted, "1 disagreement in 2 comparisons: {s:?}");

        // One disagreement among a thousand repeats is within a 1% target.
        let mut m = SequentialWilson::new(0.01, 0.95);
        for i in 0..1000 {
            let verdict = if i == 500 { "red" } else { "green" };
            m.observe("c", verdict);
        }
        let s = m.stability();
        assert_eq!((s.trials, s.disagreements), (999, 1));
        assert!(!s.untrusted, "{s:?}");
        assert!(s.flake_rate_upper < 0.01, "{s:?}");
    }

    #[test]
    fn percentages_round_up_and_read_plainly() {
        assert_eq!(percent_up(clopper_pearson_upper(0, 299, 0.95)), "1.0%");
        assert_eq!(percent_up(clopper_pearson_upper(0, 60, 0.95)), "4.9%");
        assert_eq!(percent_up(0.000_17), "0.017%");
        assert_eq!(percent_up(0.25887), "26%");
        assert_eq!(percent_plain(0.95), "95%");
        assert_eq!(percent_plain(0.999), "99.9%");
    }
}
