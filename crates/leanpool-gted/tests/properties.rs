//! Properties of the distances on random small trees, and exactness of
//! both TED algorithms against the definition-level oracle.

mod common;

use common::{arb_tree, oracle_ted};
use leanpool_gted::{
    alpha_distance, score, ted, Algorithm, AlphaOptions, CostModel, Mode, OpTree, Options,
    PaperCost, UnitCost,
};
use proptest::prelude::*;

fn dist(a: &OpTree, b: &OpTree, mode: Mode) -> f64 {
    score(a, b, mode, &Options::default()).distance
}

/// Non-unit, non-integer, asymmetric costs (dyadic, so sums are exact in
/// any order): exercises the floating-point kernel and pluggability.
struct Weighted;

impl CostModel for Weighted {
    fn delete(&self, a: &OpTree, i: usize) -> f64 {
        0.5 + a.node(i).children.len() as f64 * 0.25
    }
    fn insert(&self, _: &OpTree, _: usize) -> f64 {
        0.75
    }
    fn rename(&self, a: &OpTree, i: usize, b: &OpTree, j: usize) -> f64 {
        let (x, y) = (&a.node(i).label, &b.node(j).label);
        if x == y {
            0.0
        } else if x.as_bytes()[0] == y.as_bytes()[0] {
            0.375
        } else {
            1.125
        }
    }
}

const MODES: [Mode; 3] = [Mode::Alpha, Mode::Paper, Mode::Plain];

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn both_algorithms_equal_the_oracle(a in arb_tree(9), b in arb_tree(9)) {
        for alg in [Algorithm::ZhangShasha, Algorithm::Lr] {
            prop_assert_eq!(ted(&a, &b, &UnitCost, alg), oracle_ted(&a, &b, &UnitCost));
            prop_assert_eq!(ted(&a, &b, &PaperCost, alg), oracle_ted(&a, &b, &PaperCost));
            prop_assert_eq!(ted(&a, &b, &Weighted, alg), oracle_ted(&a, &b, &Weighted));
        }
    }

    /// Larger trees than the oracle can take: the main algorithm's mixed
    /// left/right plans (and swapped roles) against plain Zhang–Shasha.
    #[test]
    fn lr_equals_zhang_shasha(a in arb_tree(40), b in arb_tree(40)) {
        prop_assert_eq!(ted(&a, &b, &UnitCost, Algorithm::Lr), ted(&a, &b, &UnitCost, Algorithm::ZhangShasha));
        prop_assert_eq!(ted(&a, &b, &Weighted, Algorithm::Lr), ted(&a, &b, &Weighted, Algorithm::ZhangShasha));
    }

    #[test]
    fn identity_scores_one(a in arb_tree(30)) {
        for mode in MODES {
            let s = score(&a, &a, mode, &Options::default());
            prop_assert_eq!(s.distance, 0.0);
            prop_assert_eq!(s.similarity, 1.0);
        }
    }

    #[test]
    fn symmetric_and_bounded(a in arb_tree(30), b in arb_tree(30)) {
        for mode in MODES {
            let d = dist(&a, &b, mode);
            prop_assert_eq!(d, dist(&b, &a, mode), "{:?}", mode);
            prop_assert!(d >= 0.0);
            prop_assert!(d <= (a.len() + b.len()) as f64);
            // At least the size difference must be inserted or deleted.
            prop_assert!(d >= a.len().abs_diff(b.len()) as f64);
            // Not <= max(|a|, |b|): a star and a chain share few mappable
            // nodes, which is why the paper's similarity can go negative.
            let s = score(&a, &b, mode, &Options::default()).similarity;
            prop_assert!((-1.0..=1.0).contains(&s));
        }
    }

    /// Paper costs are a pseudometric here because the generator keeps
    /// plain labels and bound names disjoint (see `PaperCost` for the
    /// counterexample otherwise); alpha and plain are metrics outright.
    #[test]
    fn triangle_inequality(a in arb_tree(14), b in arb_tree(14), c in arb_tree(14)) {
        for mode in MODES {
            let (ab, bc, ac) = (dist(&a, &b, mode), dist(&b, &c, mode), dist(&a, &c, mode));
            prop_assert!(ac <= ab + bc, "{:?}: {} > {} + {}", mode, ac, ab, bc);
        }
    }

    /// Alpha mode's branch and bound equals brute force: every maximal
    /// assignment of binders, each scored by the oracle.
    #[test]
    fn alpha_search_equals_brute_force(a in arb_tree(9), b in arb_tree(9)) {
        let o = alpha_distance(&a, &b, Algorithm::Lr, &AlphaOptions::default());
        prop_assert!(o.exact);
        prop_assert_eq!(o.distance, common::brute_alpha(&a, &b));
        // The assignment it reports achieves the distance.
        let cost = leanpool_gted::AlphaCost::with_matching(&a, &b, &o.matching);
        prop_assert_eq!(oracle_ted(&a, &b, &cost), o.distance);
    }

    /// Paper mode is a relaxation of alpha mode, and alpha mode's search
    /// gives the same answer with the baseline algorithm inside.
    #[test]
    fn paper_le_alpha(a in arb_tree(20), b in arb_tree(20)) {
        let alpha = alpha_distance(&a, &b, Algorithm::ZhangShasha, &AlphaOptions::default());
        prop_assert!(dist(&a, &b, Mode::Paper) <= alpha.distance);
        prop_assert_eq!(alpha.distance, dist(&a, &b, Mode::Alpha));
    }
}
