//! The projects one daemon serves (issue 25): each a name, a Lean command
//! with its library ([`leanpool_lean::project`]) and a pool of its own.
//!
//! Workers are keyed by (project, imports): every project has its own
//! [`Pool`] (keyed by import header inside), so two projects never share a
//! worker, and spares, `max_workers` and memory are accounted per project.
//! A request picks its project with the optional `project` member of its
//! params (taken out before the method's params are decoded, like the
//! cache switch); without it the first project serves it. A name the
//! daemon does not serve is `UNKNOWN_PROJECT`.

use leanpool_cache::Identity;
use leanpool_lean::project::ProjectSpec;
use leanpool_pool::{IsolateBy, LimitSources, Pool, PoolConfig, WorkerBudget};
use leanpool_protocol::{BackendInfo, ErrorCode, LimitSource, RpcError, WorkerLimit};
use leanpool_rpc::handler::{rpc_error, CallContext};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::PathBuf;

/// The params member that names the project.
pub const PROJECT_PARAM: &str = "project";

/// One `[[project]]` table of the config.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectEntry {
    /// The name requests use; default: the last component of `dir`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The project's root directory; absent: the backend's own library
    /// (then `name` is required).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<PathBuf>,
    /// This project's own `max_workers` (at least 1; capped by the
    /// machine-wide `[pool] max_workers`); absent: a share of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_workers: Option<usize>,
    /// This project's own `max_workers_per_key` (at least 1; capped by its
    /// `max_workers`); absent: `[pool]`'s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_workers_per_key: Option<usize>,
}

impl ProjectEntry {
    /// An entry for `dir` (or the backend's library when `None`) named
    /// `name`, with no limits of its own.
    pub fn new(name: Option<String>, dir: Option<PathBuf>) -> Self {
        ProjectEntry {
            name,
            dir,
            max_workers: None,
            max_workers_per_key: None,
        }
    }

    /// Its own worker limits.
    pub fn limits(&self) -> ProjectLimits {
        ProjectLimits {
            max_workers: self.max_workers,
            max_workers_per_key: self.max_workers_per_key,
        }
    }

    /// The entry as a spec (name checked).
    pub fn spec(&self) -> Result<ProjectSpec, leanpool_lean::project::ProjectError> {
        match (&self.name, &self.dir) {
            (Some(n), d) => ProjectSpec::new(n.clone(), d.clone()),
            (None, Some(d)) => ProjectSpec::parse(&d.display().to_string()),
            (None, None) => Err(leanpool_lean::project::ProjectError::BadSpec(
                "[[project]] without `name` or `dir`".into(),
            )),
        }
    }
}

/// A project that has no pool (no Lean backend): why, and the `[pool]` and
/// `[verdict]` it would have had, which `status` reports.
pub struct NoPool {
    /// What every Lean method answers.
    pub why: String,
    /// `[pool]`.
    pub pool: PoolConfig,
    /// `[verdict]`.
    pub verdict: leanpool_pool::VerdictPolicy,
}

/// One project as the daemon serves it.
pub struct ServedProject {
    /// The name requests give as `project`.
    pub name: String,
    /// Its root directory (absent: the backend's own library).
    pub root: Option<String>,
    /// Its pool, or why there is none and the settings it would have had.
    pub pool: Result<Pool, NoPool>,
    /// `status`' report of its backend, version, library and sandbox.
    pub backend: BackendInfo,
    /// What the result cache keys its answers by; `None`: the identity
    /// the cache was opened with (the first project's).
    pub identity: Option<Identity>,
}

impl ServedProject {
    /// `[pool] isolate_by` of its pool.
    pub fn isolate_by(&self) -> IsolateBy {
        match &self.pool {
            Ok(pool) => pool.isolate_by(),
            Err(no) => no.pool.isolate_by,
        }
    }

    /// The pool, or `SPAWN_FAILED` with why there is none.
    pub fn pool(&self) -> Result<&Pool, RpcError> {
        self.pool.as_ref().map_err(|no| {
            rpc_error(
                ErrorCode::SpawnFailed,
                format!("no Lean backend: {}", no.why),
            )
        })
    }

    /// The pool as the caller may use it: under `[pool] isolate_by` its
    /// requests go to workers tagged with its uid or connection.
    pub fn pool_for(&self, ctx: &CallContext) -> Result<Pool, RpcError> {
        let pool = self.pool()?;
        Ok(match pool.isolate_by() {
            IsolateBy::None => pool.clone(),
            IsolateBy::Uid => pool.as_caller(format!("uid:{}", ctx.peer.uid)),
            IsolateBy::Connection => pool.as_caller(format!("conn:{}", ctx.conn)),
        })
    }
}

/// Takes the `project` member out of raw params: `None` when absent or
/// null, `INVALID_PARAMS` when it is not a string.
pub fn take_project(params: &mut Value) -> Result<Option<String>, RpcError> {
    let Value::Object(m) = params else {
        return Ok(None);
    };
    match m.remove(PROJECT_PARAM) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(rpc_error(
            ErrorCode::InvalidParams,
            format!("`project` must be a project's name (a string), not {other}"),
        )),
    }
}

/// The project named `name` (the first when `None`), or
/// `UNKNOWN_PROJECT` naming the ones served.
pub fn find<'a>(
    projects: &'a [ServedProject],
    name: Option<&str>,
) -> Result<&'a ServedProject, RpcError> {
    let found = match name {
        None => projects.first(),
        Some(n) => projects.iter().find(|p| p.name == n),
    };
    found.ok_or_else(|| {
        let names: Vec<&str> = projects.iter().map(|p| p.name.as_str()).collect();
        let mut shown: String = name.unwrap_or("").chars().take(80).collect();
        if name.is_some_and(|n| n.chars().count() > 80) {
            shown.push('…');
        }
        RpcError {
            code: ErrorCode::UnknownProject,
            message: format!(
                "unknown project {shown:?}: this daemon serves {} (`project` param; leave it out for {:?})",
                names.join(", "),
                names.first().copied().unwrap_or("")
            ),
            data: Some(serde_json::json!({ "projects": names })),
        }
    })
}

/// A project's own worker limits: `max_workers` / `max_workers_per_key`
/// of its `[[project]]` table (absent: its share of `[pool]`'s).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProjectLimits {
    /// Worker processes of this project over all its import sets.
    pub max_workers: Option<usize>,
    /// Worker processes of this project for one import set.
    pub max_workers_per_key: Option<usize>,
}

/// The pool config of project `index` of the projects whose own limits are
/// `limits` (one entry per project, the default first), and where its
/// worker limits came from (for `status`; given beside it to
/// `Pool::new` / `Pool::with_budget`, the config keeping the file's shape):
///
/// * `max_workers`: the project's own value, capped by the machine-wide
///   total (`[pool] max_workers`, or the machine-sized value: sized once,
///   here, since each pool sizing itself to the whole machine would
///   overcommit it), source `project`; without one, and with several
///   projects, what the projects with their own value leave of the total,
///   shared out equally between the others, source `shared`, or, when
///   that share is 0 (more such projects than places left), 1 borrowed
///   from the total, source `borrowed` (the daemon's
///   [`worker_budget`] keeps the sum of all projects' workers under the
///   total); one project without its own value keeps `[pool]`'s;
/// * `max_workers_per_key`: the project's own value, capped by its
///   `max_workers`, source `project`; else `[pool]`'s when configured, else
///   (left to the machine) the project's `max_workers`;
/// * `[pool] prewarm` for the first (default) project only; other
///   projects start workers when asked.
pub fn pool_config_for(
    base: &PoolConfig,
    limits: &[ProjectLimits],
    index: usize,
) -> (PoolConfig, LimitSources) {
    let own = limits.get(index).copied().unwrap_or_default();
    let untouched = limits.len() <= 1 && own == ProjectLimits::default();
    let total = if untouched {
        // Unused: no share, no own value to cap.
        WorkerLimit {
            value: base.max_workers.unwrap_or(1),
            source: LimitSource::Configured,
        }
    } else {
        machine_total(base)
    };
    let (cfg, mut sources) = share_out(base, limits, index, total.value);
    if matches!(
        sources.max_workers,
        LimitSource::Project | LimitSource::Shared | LimitSource::Borrowed
    ) {
        // `status` says what bound the total shared out (issue 22 part 4).
        sources.total = Some(total);
    }
    let total = total.value;
    if let Some(v) = own.max_workers.filter(|&v| v > total) {
        tracing::warn!(
            project = index,
            max_workers = v,
            total,
            "a project's max_workers is above the machine-wide [pool] max_workers: capped"
        );
    }
    (cfg, sources)
}

/// The machine-wide worker budget of `projects` projects (a hard cap on
/// worker processes over all of them, leased ones included: see
/// [`leanpool_pool::WorkerBudget`]): the total of [`pool_config_for`]
/// with more than one project; `None` for one (its pool's own
/// `max_workers` is the cap).
pub fn worker_budget(base: &PoolConfig, projects: usize) -> Option<WorkerBudget> {
    (projects > 1).then(|| WorkerBudget::new(machine_total(base)))
}

/// The machine-wide worker total and what bound it: `[pool] max_workers`
/// (`configured`), or when the config leaves it to the machine, its value
/// sized now (`cores` or `memory`).
fn machine_total(base: &PoolConfig) -> WorkerLimit {
    match base.max_workers {
        Some(n) => WorkerLimit {
            value: n.max(1),
            source: LimitSource::Configured,
        },
        None => {
            let machine = leanpool_pool::sizing::Machine::probe();
            let sources = LimitSources::default();
            leanpool_pool::sizing::size(base, sources, machine, None).max_workers
        }
    }
}

/// [`pool_config_for`] with the machine-wide total `total` given (pure).
fn share_out(
    base: &PoolConfig,
    limits: &[ProjectLimits],
    index: usize,
    total: usize,
) -> (PoolConfig, LimitSources) {
    let mut cfg = base.clone();
    let mut sources = LimitSources::default();
    if index > 0 {
        cfg.prewarm.clear();
    }
    let own = limits.get(index).copied().unwrap_or_default();
    let total = total.max(1);
    let max_workers = match own.max_workers {
        Some(v) => Some((v.clamp(1, total), LimitSource::Project)),
        None if limits.len() > 1 => {
            let taken: usize = limits
                .iter()
                .filter_map(|l| l.max_workers)
                .map(|v| v.clamp(1, total))
                .sum();
            let others = limits.iter().filter(|l| l.max_workers.is_none()).count();
            match total.saturating_sub(taken) / others.max(1) {
                // No share: one worker, borrowed from the total (the
                // budget, `worker_budget`, keeps the sum under it).
                0 => Some((1, LimitSource::Borrowed)),
                share => Some((share, LimitSource::Shared)),
            }
        }
        None => None,
    };
    if let Some((value, source)) = max_workers {
        cfg.max_workers = Some(value);
        sources.max_workers = source;
    }
    let cap = cfg.max_workers.unwrap_or(total);
    if let Some(v) = own.max_workers_per_key {
        cfg.max_workers_per_key = Some(v.clamp(1, cap));
        sources.max_workers_per_key = LimitSource::Project;
    } else if let (None, Some((value, source))) = (cfg.max_workers_per_key, max_workers) {
        // Left to the machine: follows the project's own or shared
        // `max_workers` (a lone project's `[pool]` value is sized as usual).
        cfg.max_workers_per_key = Some(value);
        sources.max_workers_per_key = source;
    }
    (cfg, sources)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn project_member_is_taken_out() {
        let mut p = json!({"text": "x", "project": "judge"});
        assert_eq!(take_project(&mut p).unwrap().as_deref(), Some("judge"));
        assert_eq!(p, json!({"text": "x"}));
        let mut p = json!({"text": "x", "project": null});
        assert_eq!(take_project(&mut p).unwrap(), None);
        let mut p = json!({"text": "x", "project": 3});
        assert_eq!(
            take_project(&mut p).unwrap_err().code,
            ErrorCode::InvalidParams
        );
    }

    fn lim(max_workers: Option<usize>, per_key: Option<usize>) -> ProjectLimits {
        ProjectLimits {
            max_workers,
            max_workers_per_key: per_key,
        }
    }

    /// `(max_workers, its source, max_workers_per_key, its source)`.
    fn limits_of(
        (cfg, sources): &(PoolConfig, LimitSources),
    ) -> (usize, LimitSource, usize, LimitSource) {
        let machine = leanpool_pool::sizing::Machine::probe();
        let l = leanpool_pool::sizing::size(cfg, *sources, machine, None);
        (
            l.max_workers.value,
            l.max_workers.source,
            l.max_workers_per_key.value,
            l.max_workers_per_key.source,
        )
    }

    use leanpool_protocol::LimitSource::{Borrowed, Configured, Project, Shared};

    /// `status` says what bound the total a project's limit was taken
    /// from (issue 22 part 4): `[pool] max_workers` is `configured`; left
    /// to the machine, `cores` or `memory`, as sizing says; a lone
    /// project's own `[pool]` limit carries no total.
    #[test]
    fn a_shared_limit_names_what_bound_the_total() {
        let size = |(cfg, sources): &(PoolConfig, LimitSources)| {
            leanpool_pool::sizing::size(
                cfg,
                *sources,
                leanpool_pool::sizing::Machine::probe(),
                None,
            )
        };
        let base = PoolConfig {
            max_workers: Some(5),
            ..PoolConfig::default()
        };
        let two = [lim(Some(3), None), lim(None, None)];
        for i in 0..2 {
            let total = size(&pool_config_for(&base, &two, i)).total;
            assert_eq!(
                total,
                Some(WorkerLimit {
                    value: 5,
                    source: Configured
                })
            );
        }
        let sized = PoolConfig::default();
        let alone = (sized.clone(), LimitSources::default());
        let machine = size(&alone).max_workers;
        assert!(matches!(
            machine.source,
            LimitSource::Cores | LimitSource::Memory
        ));
        let shared = size(&pool_config_for(&sized, &two[1..].repeat(2), 1));
        assert_eq!(shared.total, Some(machine));
        assert_eq!(
            size(&pool_config_for(&base, &[lim(None, None)], 0)).total,
            None
        );
        assert!(size(&alone).by_memory.is_some(), "memory readable here");
    }

    #[test]
    fn shares_out_max_workers() {
        let base = PoolConfig {
            max_workers: Some(5),
            max_workers_per_key: Some(4),
            ..PoolConfig::default()
        };
        let none = [ProjectLimits::default(); 2];
        assert_eq!(
            limits_of(&pool_config_for(&base, &none, 0)),
            (2, Shared, 4, Configured)
        );
        let nine = [ProjectLimits::default(); 9];
        // Nine projects, five places: no share, one borrowed each (the
        // daemon's budget keeps the sum under five).
        assert_eq!(
            limits_of(&pool_config_for(&base, &nine, 1)),
            (1, Borrowed, 4, Configured)
        );
        // One project without limits of its own: `[pool]` as it is.
        let one = [ProjectLimits::default()];
        assert_eq!(
            limits_of(&pool_config_for(&base, &one, 0)),
            (5, Configured, 4, Configured)
        );
        // Machine-sized: sized once and shared, never each pool the whole
        // machine.
        let sized = PoolConfig::default();
        let machine = machine_total(&sized).value;
        let second = pool_config_for(&sized, &none, 1);
        let share = (machine / 2).max(1);
        assert_eq!(limits_of(&second), (share, Shared, share, Shared));
        assert_eq!(second.0.max_workers, Some(share));
        let first = pool_config_for(&sized, &one, 0);
        assert_eq!(
            (first.0.max_workers, first.0.max_workers_per_key),
            (None, None)
        );
        // A lone project with `[pool] max_workers` only: its per-key limit
        // stays the machine's (sized, lowered to max_workers by sizing).
        let lone = PoolConfig {
            max_workers: Some(8),
            ..PoolConfig::default()
        };
        assert_eq!(pool_config_for(&lone, &one, 0).0.max_workers_per_key, None);
    }

    #[test]
    fn a_project_sets_its_own_limits_capped_by_the_total() {
        let base = PoolConfig {
            max_workers: Some(6),
            max_workers_per_key: Some(2),
            ..PoolConfig::default()
        };
        // judge sets 4 of 6: the two others share the 2 left.
        let three = [lim(None, None), lim(Some(4), Some(3)), lim(None, None)];
        let cfg = |i| limits_of(&share_out(&base, &three, i, 6));
        assert_eq!(cfg(1), (4, Project, 3, Project));
        assert_eq!(cfg(0), (1, Shared, 2, Configured));
        assert_eq!(cfg(2), (1, Shared, 2, Configured));
        // Above the machine-wide total: capped by it; its per-key value by
        // its own max_workers.
        let big = [lim(Some(50), Some(80)), lim(None, None)];
        assert_eq!(
            limits_of(&share_out(&base, &big, 0, 6)),
            (6, Project, 6, Project)
        );
        // Nothing left over: the others still get one each.
        assert_eq!(limits_of(&share_out(&base, &big, 1, 6)).0, 1);
        // A single project may lower its limits below `[pool]`'s.
        let alone = [lim(Some(3), None)];
        assert_eq!(
            limits_of(&pool_config_for(&base, &alone, 0)),
            (3, Project, 2, Configured)
        );
        let per_key_only = [lim(None, Some(1))];
        assert_eq!(
            limits_of(&pool_config_for(&base, &per_key_only, 0)),
            (6, Configured, 1, Project)
        );
        // Left to the machine: the project's per-key value follows its own
        // max_workers.
        let sized = PoolConfig::default();
        let own = [lim(Some(1), None), lim(None, None)];
        assert_eq!(
            limits_of(&share_out(&sized, &own, 0, 8)),
            (1, Project, 1, Project)
        );
        assert_eq!(
            limits_of(&share_out(&sized, &own, 1, 8)),
            (7, Shared, 7, Shared)
        );
    }

    #[test]
    fn project_limits_are_read_from_the_config() {
        let cfg: crate::DaemonConfig = toml::from_str(
            "[[project]]\nname = \"core\"\n\n[[project]]\nname = \"judge\"\ndir = \"/srv/judge\"\nmax_workers = 3\nmax_workers_per_key = 2\n",
        )
        .unwrap();
        let limits: Vec<_> = cfg.projects.iter().map(ProjectEntry::limits).collect();
        assert_eq!(limits, [lim(None, None), lim(Some(3), Some(2))]);
        let mut zero = cfg.clone();
        zero.projects[1].max_workers = Some(0);
        assert!(zero.validate().is_err());
    }

    #[test]
    fn config_entries() {
        let e = ProjectEntry::new(None, Some("/srv/judge".into()));
        assert_eq!(e.spec().unwrap().name, "judge");
        let e = ProjectEntry::new(Some("core".into()), None);
        assert_eq!(e.spec().unwrap().root, None);
        assert!(ProjectEntry::new(None, None).spec().is_err());
    }
}
