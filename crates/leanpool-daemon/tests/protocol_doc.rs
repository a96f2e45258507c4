//! `docs/protocol.md` matches the code: every example request/response pair
//! round-trips through the protocol types, every error code is in the
//! table, every method has a section, the config example loads, and the
//! examples marked `live` get the documented answer from a real daemon
//! (in-process, over a Unix socket, without Lean).

use leanpool_daemon::methods::{decode as decode_params, METHODS};
use leanpool_daemon::{BackendInfo, DaemonConfig, PoolHandler, StatusResult};
use leanpool_protocol::{CheckParams, EquivParams, EquivResult, VerifyParams, VerifyResult};
use leanpool_protocol::{
    CheckResult, ErrorCode, GtedParams, GtedResult, NormalizeResult, OptResult, Response,
    StatementParams,
};
use leanpool_rpc::framing::Frame;
use leanpool_rpc::request::{decode, Decoded};
use leanpool_rpc::{Server, ServerOptions};
use serde::{de::DeserializeOwned, Serialize};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const DOC: &str = include_str!("../../../docs/protocol.md");

struct Example {
    line: usize,
    request: String,
    response: String,
    /// `live`, `live-shape`, `live-code`, or empty.
    live: String,
}

/// Fenced blocks `json request [live...]` each followed by `json response`.
fn examples() -> Vec<Example> {
    let lines: Vec<&str> = DOC.lines().collect();
    let mut blocks = vec![];
    let mut i = 0;
    while i < lines.len() {
        if let Some(info) = lines[i].strip_prefix("```") {
            let start = i + 1;
            let mut end = start;
            while !lines[end].starts_with("```") {
                end += 1;
            }
            blocks.push((i + 1, info.trim().to_string(), lines[start..end].join("\n")));
            i = end;
        }
        i += 1;
    }
    let mut out = vec![];
    for (k, (line, info, body)) in blocks.iter().enumerate() {
        let words: Vec<&str> = info.split_whitespace().collect();
        if words.first() != Some(&"json") || words.get(1) != Some(&"request") {
            continue;
        }
        let (_, next_info, response) = blocks
            .get(k + 1)
            .unwrap_or_else(|| panic!("line {line}: request without response"));
        assert_eq!(
            next_info, "json response",
            "line {line}: a request block must be followed by its response"
        );
        out.push(Example {
            line: *line,
            request: body.clone(),
            response: response.clone(),
            live: words.get(2).unwrap_or(&"").to_string(),
        });
    }
    out
}

/// `T` parses the value and writes it back identically (nothing renamed,
/// dropped or added).
fn round_trip<T: DeserializeOwned + Serialize>(what: &str, line: usize, v: &Value) {
    let t: T = serde_json::from_value(v.clone())
        .unwrap_or_else(|e| panic!("line {line}: {what} does not parse: {e}\n{v}"));
    assert_eq!(
        &serde_json::to_value(&t).unwrap(),
        v,
        "line {line}: {what} does not round-trip"
    );
}

fn documented_codes() -> Vec<i64> {
    DOC.lines()
        .filter_map(|l| l.strip_prefix("| -32"))
        .map(|l| {
            format!("-32{}", l.split('|').next().unwrap().trim())
                .parse()
                .unwrap()
        })
        .collect()
}

#[test]
fn every_example_round_trips() {
    let ex = examples();
    assert!(ex.len() >= 15, "only {} examples found", ex.len());
    let table = documented_codes();
    let mut methods_seen = std::collections::BTreeSet::new();
    for e in &ex {
        if let Some(m) = example_round_trips(e, &table) {
            methods_seen.insert(m);
        }
    }
    for m in METHODS {
        assert!(
            DOC.contains(&format!("### `{m}`")),
            "method {m} has no section"
        );
        assert!(methods_seen.contains(*m), "method {m} has no example");
    }
    let all = ErrorCode::ALL.map(|c| c.code());
    let mut t = table.clone();
    t.sort();
    let mut a = all.to_vec();
    a.sort();
    assert_eq!(t, a, "error table and leanpool_protocol::ErrorCode differ");
}

/// One example pair: the request decodes as the daemon decodes it, the
/// response and the params and result round-trip through their types, a
/// documented error is in the table and is the daemon's. The example's
/// method, if its request is a call.
fn example_round_trips(e: &Example, table: &[i64]) -> Option<String> {
    let decoded = decode(&Frame::Line(e.request.as_bytes().to_vec()), usize::MAX);
    let resp: Response = serde_json::from_str(&e.response)
        .unwrap_or_else(|err| panic!("line {}: response: {err}", e.line));
    let resp_value: Value = serde_json::from_str(&e.response).unwrap();
    round_trip::<Response>("response envelope", e.line, &resp_value);
    if let Some(err) = &resp.error {
        assert!(
            table.contains(&err.code.code()),
            "line {}: code {} not in the error table",
            e.line,
            err.code
        );
    }
    let req = match decoded {
        Decoded::Call(r) => r,
        Decoded::Reply(r) => {
            // A request the envelope decoder refuses: the documented
            // answer must be exactly the decoder's.
            assert_eq!(
                serde_json::to_value(&r).unwrap(),
                resp_value,
                "line {}",
                e.line
            );
            return None;
        }
        Decoded::Blank => panic!("line {}: empty request", e.line),
    };
    assert_eq!(req.id, resp.id, "line {}: ids differ", e.line);
    let mut params = req.params.clone();
    // `project` picks the daemon's project and is taken out before the
    // method's params are decoded (docs/protocol.md, "Projects").
    leanpool_daemon::projects::take_project(&mut params).unwrap();
    params_round_trip(&req.method, params, &resp, e.line);
    if let Some(result) = &resp.result {
        result_round_trips(&req.method, &req.params, result, e.line);
    }
    Some(req.method)
}

/// The method's params decode as the daemon decodes them and round-trip
/// through their type; params the daemon refuses are documented with the
/// daemon's error code.
fn params_round_trip(method: &str, params: Value, resp: &Response, line: usize) {
    match decode_params(method, params.clone()) {
        Ok(()) => match method {
            "check" => round_trip::<CheckParams>("params", line, &params),
            "verify" => round_trip::<VerifyParams>("params", line, &params),
            "normalize" | "opt" => round_trip::<StatementParams>("params", line, &params),
            "gted" => round_trip::<GtedParams>("params", line, &params),
            "equiv" => round_trip::<EquivParams>("params", line, &params),
            "lease" => round_trip::<leanpool_daemon::lease::LeaseParams>("params", line, &params),
            _ => {}
        },
        Err(err) => {
            let documented = resp.error.as_ref().map(|e| e.code);
            if !["ping", "shutdown"].contains(&method) {
                assert_eq!(
                    documented,
                    Some(err.code),
                    "line {}: the daemon would answer {err:?}",
                    line
                );
            }
        }
    }
}

/// The documented result round-trips through the method's result type.
fn result_round_trips(method: &str, req_params: &Value, result: &Value, line: usize) {
    match method {
        "check" => round_trip::<CheckResult>("result", line, result),
        "verify" => round_trip::<VerifyResult>("result", line, result),
        "normalize" => round_trip::<NormalizeResult>("result", line, result),
        "opt" => round_trip::<OptResult>("result", line, result),
        "gted" => round_trip::<GtedResult>("result", line, result),
        "equiv" => round_trip::<EquivResult>("result", line, result),
        "status" => round_trip::<StatusResult>("result", line, result),
        "lease" => round_trip::<leanpool_daemon::lease::LeaseResult>("result", line, result),
        "ping" => assert_eq!(result, req_params, "line {}: ping echoes", line),
        "shutdown" => assert_eq!(result, &serde_json::json!({"shutting_down": true})),
        "cache_clear" => {
            round_trip::<leanpool_protocol::method::CacheClearResult>("result", line, result)
        }
        m => panic!("line {}: result for undocumented method {m}", line),
    }
}

#[test]
fn config_example_loads() {
    let start = DOC.find("```toml\n").expect("a toml block") + "```toml\n".len();
    let body = &DOC[start..start + DOC[start..].find("```").unwrap()];
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("d.toml");
    std::fs::write(&p, body).unwrap();
    let c = DaemonConfig::load(&p).unwrap();
    assert_eq!((c.socket_mode, c.pool.prewarm.len()), (0o600, 1));
}

/// Same structure: same JSON types, and the same keys except optional
/// ones that one side may lack.
fn same_shape(doc: &Value, live: &Value, path: &str) {
    // A daemon without Lean has no library and no sandbox to report.
    const OPTIONAL: &[&str] = &[
        "version",
        "error",
        "service",
        "rss_bytes",
        "pid",
        "library",
        "library_error",
        "sandbox",
    ];
    match (doc, live) {
        (Value::Object(d), Value::Object(l)) => {
            for k in d.keys().chain(l.keys()) {
                match (d.get(k), l.get(k)) {
                    (Some(dv), Some(lv)) => same_shape(dv, lv, &format!("{path}.{k}")),
                    _ => assert!(
                        OPTIONAL.contains(&k.as_str()),
                        "{path}.{k} present on one side only"
                    ),
                }
            }
        }
        (Value::Array(d), Value::Array(l)) => {
            if let (Some(dv), Some(lv)) = (d.first(), l.first()) {
                same_shape(dv, lv, &format!("{path}[0]"));
            }
        }
        (Value::Null, _) | (_, Value::Null) => {}
        (d, l) => assert_eq!(
            std::mem::discriminant(d),
            std::mem::discriminant(l),
            "{path}: documented {d}, daemon sent {l}"
        ),
    }
}

#[tokio::test]
async fn live_examples_match_a_real_daemon() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("doc.sock");
    let handler = PoolHandler::without_lean(
        "bad backend description /nonexistent.json".into(),
        &DaemonConfig::default(),
        &socket,
        BackendInfo::unavailable("no Lean in this test".into()),
    );
    let server = Server::bind(ServerOptions::new(&socket), handler).unwrap();
    tokio::spawn(server.run());
    let (rd, mut wr) = tokio::net::UnixStream::connect(&socket)
        .await
        .unwrap()
        .into_split();
    let mut rd = BufReader::new(rd);
    let mut n = 0;
    for e in examples().iter().filter(|e| e.live.starts_with("live")) {
        wr.write_all(format!("{}\n", e.request).as_bytes())
            .await
            .unwrap();
        let mut line = String::new();
        rd.read_line(&mut line).await.unwrap();
        let got: Value = serde_json::from_str(&line).unwrap();
        let want: Value = serde_json::from_str(&e.response).unwrap();
        match e.live.as_str() {
            "live" => assert_eq!(
                got, want,
                "line {}: the daemon answered differently",
                e.line
            ),
            "live-code" => assert_eq!(
                (&got["id"], &got["error"]["code"]),
                (&want["id"], &want["error"]["code"]),
                "line {}: {got}",
                e.line
            ),
            "live-shape" => same_shape(&want, &got, "answer"),
            other => panic!("line {}: unknown marker {other}", e.line),
        }
        n += 1;
    }
    assert!(n >= 9, "only {n} live examples");
}
