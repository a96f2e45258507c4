//! Unit tests of `sandbox` (moved out of `sandbox.rs`).

use super::*;

fn sh(script: &str) -> LeanCommand {
    LeanCommand {
        program: "/bin/sh".into(),
        args: vec!["-c".into(), script.into()],
        env: vec![],
        cwd: None,
        backend: BackendKind::Native,
        version: None,
        source: "test".into(),
    }
}

async fn run_in(cfg: &SandboxConfig, cmd: &LeanCommand) -> (Option<i32>, String, String) {
    let sb = Sandbox::prepare(cmd, cfg).expect("this kernel supports the sandbox");
    let mut c = cmd.command(&[]);
    sb.apply(&mut c);
    c.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let out = crate::proc::spawn(c)
        .unwrap()
        .wait_with_output()
        .await
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn modes_parse() {
    let c: SandboxConfig = serde_json::from_str(r#"{"mode":"best-effort"}"#).unwrap();
    assert_eq!(c.mode, SandboxMode::BestEffort);
    assert_eq!(SandboxConfig::default().mode, SandboxMode::Required);
    assert!(serde_json::from_str::<SandboxConfig>(r#"{"mode":"maybe"}"#).is_err());
    assert_eq!("off".parse::<SandboxMode>(), Ok(SandboxMode::Off));
}

#[test]
fn required_refuses_an_old_kernel_best_effort_reports_what_is_missing() {
    let cmd = sh("true");
    let e = Plan::for_abi(&cmd, &SandboxConfig::default(), 5).unwrap_err();
    assert!(e.to_string().contains("Landlock ABI is 5"), "{e}");
    assert!(matches!(
        Plan::for_abi(&cmd, &SandboxConfig::default(), 0),
        Err(SandboxError::Unsupported { found: 0 })
    ));
    let be = SandboxConfig {
        mode: SandboxMode::BestEffort,
        ..Default::default()
    };
    let p = Plan::for_abi(&cmd, &be, 3).unwrap();
    assert_eq!(p.missing, ["landlock-tcp", "landlock-scope"]);
    assert!(p.summary().contains("NOT enforced"), "{}", p.summary());
    let full = Plan::for_abi(&cmd, &SandboxConfig::default(), 7).unwrap();
    assert!(full.missing.is_empty());
    assert!(full.read_exec.contains(&PathBuf::from("/usr")));
    let off = SandboxConfig {
        mode: SandboxMode::Off,
        ..Default::default()
    };
    assert!(Plan::for_abi(&cmd, &off, 0).unwrap().enforced.is_empty());
}

#[test]
fn seccomp_program_is_well_formed() {
    let p = seccomp_program();
    for (i, ins) in p.iter().enumerate() {
        if ins.code & 0x07 == libc::BPF_JMP as u16 {
            assert!(
                i + 1 + (ins.jt.max(ins.jf) as usize) < p.len(),
                "jump past the end at {i}"
            );
        }
    }
    assert_eq!(p.last().unwrap().k, libc::SECCOMP_RET_ALLOW);
}

/// A shell in the sandbox cannot read a file outside it, cannot write
/// outside its directory, can write inside it, cannot open a socket
/// (bash's /dev/tcp) and cannot signal its parent.
#[tokio::test]
async fn shell_in_sandbox_reaches_only_its_own_dir() {
    if landlock_abi() < REQUIRED_ABI {
        panic!(
            "this test needs Landlock ABI >= {REQUIRED_ABI}; the kernel has {}",
            landlock_abi()
        );
    }
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret");
    std::fs::write(&secret, "s3cr3t-ab12").unwrap();
    let target = outside.path().join("written");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = format!(
            "cat {s}; echo cat=$?; echo x > {t}; echo write=$?; echo y > \"$TMPDIR/ok\" && cat \"$TMPDIR/ok\"; \
             (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null; echo tcp=$?; kill -0 {parent}; echo kill=$?",
            s = secret.display(),
            t = target.display(),
            parent = std::process::id(),
        );
    let cmd = LeanCommand {
        args: vec!["-c".into(), script],
        ..sh("")
    };
    // /bin/sh may be dash, which has no /dev/tcp: use bash when present.
    let cmd = if Path::new("/bin/bash").exists() {
        LeanCommand {
            program: "/bin/bash".into(),
            ..cmd
        }
    } else {
        cmd
    };
    let (code, out, err) = run_in(&SandboxConfig::default(), &cmd).await;
    assert_eq!(code, Some(0), "stdout {out:?} stderr {err:?}");
    assert!(!out.contains("s3cr3t"), "{out}");
    assert!(out.contains("cat=1"), "{out}");
    assert!(out.contains("write=1") || out.contains("write=2"), "{out}");
    assert!(!target.exists());
    assert!(out.contains("\ny\n"), "{out}");
    if cmd.program.ends_with("bash") {
        assert!(out.contains("tcp=1"), "{out}");
    }
    assert!(out.contains("kill=1"), "{out}");
    listener.set_nonblocking(true).unwrap();
    assert!(listener.accept().is_err(), "a connection got through");
}

/// Connecting to a Unix socket the daemon's user may use (like the
/// daemon's own) fails: `socket(2)` itself is denied. A network
/// namespace would not stop this; Landlock ABI 7 has no rule for it.
#[tokio::test]
async fn unix_socket_connect_to_a_host_listener_fails() {
    let outside = tempfile::tempdir().unwrap();
    let path = outside.path().join("daemon.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    listener.set_nonblocking(true).unwrap();
    let script = format!(
            "import socket\ntry:\n    s = socket.socket(socket.AF_UNIX)\n    s.connect({:?})\n    print('CONNECTED')\nexcept OSError as e:\n    print('DENIED', e.errno)\n",
            path.display().to_string()
        );
    let cmd = LeanCommand {
        program: "/usr/bin/python3".into(),
        args: vec!["-c".into(), script],
        ..sh("")
    };
    assert!(cmd.program.exists(), "this test needs /usr/bin/python3");
    let (code, out, err) = run_in(&SandboxConfig::default(), &cmd).await;
    assert_eq!(code, Some(0), "{out} {err}");
    assert_eq!(out.trim(), format!("DENIED {}", libc::EACCES), "{err}");
    assert!(listener.accept().is_err(), "a connection arrived");
    // Unsandboxed, the same script connects (the test can fail).
    let off = SandboxConfig {
        mode: SandboxMode::Off,
        ..Default::default()
    };
    let (_, out, _) = run_in(&off, &cmd).await;
    assert_eq!(out.trim(), "CONNECTED");
}

#[tokio::test]
async fn off_runs_unsandboxed_and_dir_goes_with_the_sandbox() {
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret");
    std::fs::write(&secret, "visible").unwrap();
    let cmd = sh(&format!("cat {}", secret.display()));
    let off = SandboxConfig {
        mode: SandboxMode::Off,
        ..Default::default()
    };
    let (code, out, _) = run_in(&off, &cmd).await;
    assert_eq!((code, out.as_str()), (Some(0), "visible"));
    let sb = Sandbox::prepare(&cmd, &SandboxConfig::default()).unwrap();
    let dir = sb.dir().unwrap().to_path_buf();
    assert!(dir.is_dir());
    drop(sb);
    assert!(!dir.exists());
}
