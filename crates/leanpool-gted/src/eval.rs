//! Evaluation against human judgements, laid out like the GTED paper's data.
//!
//! A data directory holds `human_evaluation.json` (items with
//! `sub_questions[0].Human_Evaluation`), optionally `gted_result.json` (the
//! same items with the paper's score in `sub_questions[0].gted`), and the
//! trees `label/ast/label_code_N.json`, `predict/ast/predict_code_N.json`
//! for item `N` (1-based). A pair is predicted "same" iff its score is
//! `>= threshold`. Statistics are computed as the paper's
//! `gted_accuracy.json` has them: its threshold sweep is `i * 0.001` for
//! `i = 0..=1000` (those exact floats), and its best threshold is the first
//! one with the highest Cohen's kappa.

use crate::tree::OpTree;
use std::path::{Path, PathBuf};

/// The GTED paper's threshold: a similarity at or above it counts as the
/// same statement (the CLI's `--threshold` default).
pub const PAPER_THRESHOLD: f64 = 0.754;

/// One label/prediction pair.
#[derive(Debug, Clone)]
pub struct Pair {
    /// 1-based item number.
    pub index: usize,
    /// The reference statement's tree.
    pub label: OpTree,
    /// The predicted statement's tree.
    pub predict: OpTree,
    /// The human judgement: are the statements the same?
    pub human: bool,
    /// The paper's stored score, if `gted_result.json` is present.
    pub stored: Option<f64>,
}

/// Errors loading a data directory.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error("{path}: {source}")]
    /// A file could not be read.
    Io {
        /// The file.
        path: PathBuf,
        /// What reading it said.
        source: std::io::Error,
    },
    #[error("{path}: {msg}")]
    /// A file's content is not what the data set holds (`msg` says how).
    #[allow(missing_docs)]
    Data { path: PathBuf, msg: String },
}

fn read_json(path: &Path) -> Result<serde_json::Value, EvalError> {
    let text = std::fs::read_to_string(path).map_err(|source| EvalError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|e| EvalError::Data {
        path: path.to_path_buf(),
        msg: e.to_string(),
    })
}

fn read_tree(path: &Path) -> Result<OpTree, EvalError> {
    OpTree::from_json(&read_json(path)?).map_err(|e| EvalError::Data {
        path: path.to_path_buf(),
        msg: e.to_string(),
    })
}

/// `sub_questions[0].<field>` of every item of a JSON array file.
fn sub_field(path: &Path, field: &str) -> Result<Vec<serde_json::Value>, EvalError> {
    let v = read_json(path)?;
    let err = |msg: String| EvalError::Data {
        path: path.to_path_buf(),
        msg,
    };
    let items = v
        .as_array()
        .ok_or_else(|| err("expected a JSON array".into()))?;
    items
        .iter()
        .enumerate()
        .map(|(i, it)| {
            it.pointer(&format!("/sub_questions/0/{field}"))
                .cloned()
                .ok_or_else(|| err(format!("item {}: no sub_questions[0].{field}", i + 1)))
        })
        .collect()
}

/// Loads every pair of a data directory.
pub fn load_dir(dir: &Path) -> Result<Vec<Pair>, EvalError> {
    let human_path = dir.join("human_evaluation.json");
    let human = sub_field(&human_path, "Human_Evaluation")?;
    let result_path = dir.join("gted_result.json");
    let stored = if result_path.exists() {
        Some(sub_field(&result_path, "gted")?)
    } else {
        None
    };
    if let Some(s) = &stored {
        if s.len() != human.len() {
            return Err(EvalError::Data {
                path: result_path,
                msg: format!("{} items, but {} human judgements", s.len(), human.len()),
            });
        }
    }
    let mut pairs = Vec::with_capacity(human.len());
    for (i, h) in human.iter().enumerate() {
        let n = i + 1;
        let human = h.as_bool().ok_or_else(|| EvalError::Data {
            path: human_path.clone(),
            msg: format!("item {n}: Human_Evaluation is not a bool"),
        })?;
        let stored = match &stored {
            Some(s) => Some(s[i].as_f64().ok_or_else(|| EvalError::Data {
                path: result_path.clone(),
                msg: format!("item {n}: gted is not a number"),
            })?),
            None => None,
        };
        pairs.push(Pair {
            index: n,
            label: read_tree(&dir.join(format!("label/ast/label_code_{n}.json")))?,
            predict: read_tree(&dir.join(format!("predict/ast/predict_code_{n}.json")))?,
            human,
            stored,
        });
    }
    Ok(pairs)
}

/// Confusion counts and the statistics derived from them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Confusion {
    /// Predicted same, judged same.
    pub tp: usize,
    /// Predicted different, judged different.
    pub tn: usize,
    /// Predicted same, judged different.
    pub fp: usize,
    /// Predicted different, judged same.
    pub fn_: usize,
}

impl Confusion {
    /// Scores `>= threshold` are predicted "same".
    pub fn at(scores: &[f64], human: &[bool], threshold: f64) -> Confusion {
        let predicted: Vec<bool> = scores.iter().map(|&s| s >= threshold).collect();
        Confusion::of(&predicted, human)
    }

    /// Counts for any metric's "same" predictions against the human
    /// judgements (same length).
    pub fn of(predicted: &[bool], human: &[bool]) -> Confusion {
        assert_eq!(predicted.len(), human.len());
        let mut c = Confusion {
            tp: 0,
            tn: 0,
            fp: 0,
            fn_: 0,
        };
        for (&p, &h) in predicted.iter().zip(human) {
            match (p, h) {
                (true, true) => c.tp += 1,
                (true, false) => c.fp += 1,
                (false, false) => c.tn += 1,
                (false, true) => c.fn_ += 1,
            }
        }
        c
    }

    /// All pairs counted.
    pub fn total(&self) -> usize {
        self.tp + self.tn + self.fp + self.fn_
    }

    /// 0 when nothing is predicted "same" (scikit-learn's zero_division).
    pub fn precision(&self) -> f64 {
        ratio(self.tp, self.tp + self.fp)
    }

    /// `tp / (tp + fn)`; 0 when nothing is judged "same".
    pub fn recall(&self) -> f64 {
        ratio(self.tp, self.tp + self.fn_)
    }

    /// `(tp + tn) / total`.
    pub fn accuracy(&self) -> f64 {
        ratio(self.tp + self.tn, self.total())
    }

    /// Cohen's kappa, `(p_o - p_e) / (1 - p_e)`; 0 when `p_e = 1` (both
    /// raters constant), where it is undefined.
    pub fn kappa(&self) -> f64 {
        let n = self.total() as f64;
        let (tp, tn, fp, fn_) = (
            self.tp as f64,
            self.tn as f64,
            self.fp as f64,
            self.fn_ as f64,
        );
        let po = (tp + tn) / n;
        let pe = ((tp + fp) * (tp + fn_) + (tn + fn_) * (tn + fp)) / n / n;
        if pe >= 1.0 {
            0.0
        } else {
            (po - pe) / (1.0 - pe)
        }
    }
}

fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// The paper's sweep: thresholds `i * 0.001`, `i = 0..=1000`.
pub fn sweep(scores: &[f64], human: &[bool]) -> Vec<(f64, Confusion)> {
    (0..=1000)
        .map(|i| i as f64 * 0.001)
        .map(|t| (t, Confusion::at(scores, human, t)))
        .collect()
}

/// The first threshold of the sweep with the highest kappa.
pub fn best_threshold(sweep: &[(f64, Confusion)]) -> (f64, Confusion) {
    let mut best = sweep[0];
    for &(t, c) in &sweep[1..] {
        if c.kappa() > best.1.kappa() {
            best = (t, c);
        }
    }
    best
}
