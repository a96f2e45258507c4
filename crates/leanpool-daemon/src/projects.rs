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
use leanpool_pool::{IsolateBy, Pool, PoolConfig};
use leanpool_protocol::{BackendInfo, ErrorCode, RpcError};
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
}

impl ProjectEntry {
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

/// One project as the daemon serves it.
pub struct ServedProject {
    /// The name requests give as `project`.
    pub name: String,
    /// Its root directory (absent: the backend's own library).
    pub root: Option<String>,
    /// Its pool, or why there is none and the config it would have had.
    pub pool: Result<Pool, (String, PoolConfig)>,
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
            Err((_, cfg)) => cfg.isolate_by,
        }
    }

    /// The pool, or `SPAWN_FAILED` with why there is none.
    pub fn pool(&self) -> Result<&Pool, RpcError> {
        self.pool
            .as_ref()
            .map_err(|(e, _)| rpc_error(ErrorCode::SpawnFailed, format!("no Lean backend: {e}")))
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

/// The pool config of project `index` of `count`: `max_workers` shared
/// out (at least 1 each), `[pool] prewarm` for the first (default) project
/// only; other projects start workers when asked. With several projects a
/// machine-sized `max_workers` (`leanpool_pool::sizing`) is sized once,
/// here, and shared out the same way (each pool sizing itself to the whole
/// machine would overcommit it); `max_workers_per_key` left to the machine
/// follows the project's share.
pub fn pool_config_for(base: &PoolConfig, index: usize, count: usize) -> PoolConfig {
    let mut cfg = base.clone();
    if index > 0 {
        cfg.prewarm.clear();
    }
    if count <= 1 {
        return cfg;
    }
    let total = if base.sized.max_workers {
        let machine = leanpool_pool::sizing::Machine::probe();
        leanpool_pool::sizing::size(base, base.sized, machine, None)
            .max_workers
            .value
    } else {
        base.max_workers
    };
    cfg.max_workers = (total / count).max(1);
    cfg.sized.max_workers = false;
    if cfg.sized.max_workers_per_key {
        cfg.max_workers_per_key = cfg.max_workers;
        cfg.sized.max_workers_per_key = false;
    }
    cfg
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

    #[test]
    fn shares_out_max_workers() {
        let base = PoolConfig {
            max_workers: 5,
            ..PoolConfig::default()
        };
        assert_eq!(pool_config_for(&base, 0, 2).max_workers, 2);
        assert_eq!(pool_config_for(&base, 1, 9).max_workers, 1);
        assert_eq!(pool_config_for(&base, 0, 1).max_workers, 5);
        // Machine-sized: sized once and shared, never each pool the whole
        // machine.
        let sized = PoolConfig {
            sized: leanpool_pool::sizing::SizedLimits::BOTH,
            ..PoolConfig::default()
        };
        let machine = leanpool_pool::sizing::size(
            &sized,
            sized.sized,
            leanpool_pool::sizing::Machine::probe(),
            None,
        );
        let one = pool_config_for(&sized, 1, 2);
        assert_eq!(one.max_workers, (machine.max_workers.value / 2).max(1));
        assert_eq!(one.max_workers_per_key, one.max_workers);
        assert_eq!(one.sized, Default::default());
        assert_eq!(pool_config_for(&sized, 0, 1).sized, sized.sized);
    }

    #[test]
    fn config_entries() {
        let e = ProjectEntry {
            name: None,
            dir: Some("/srv/judge".into()),
        };
        assert_eq!(e.spec().unwrap().name, "judge");
        let e = ProjectEntry {
            name: Some("core".into()),
            dir: None,
        };
        assert_eq!(e.spec().unwrap().root, None);
        assert!(ProjectEntry {
            name: None,
            dir: None
        }
        .spec()
        .is_err());
    }
}
