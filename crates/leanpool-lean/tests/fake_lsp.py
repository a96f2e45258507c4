#!/usr/bin/env python3
"""A stand-in LSP server for testing the *driver's* mechanics (framing
noise, server-to-client requests, ordering of diagnostics and progress,
deaths, process-group kills) quickly and deterministically. It is not Lean
and says nothing about Lean: tests about Lean run the real one
(tests/lean_worker.rs).

Behaviour, per document text:
  - every line containing `bad` gets an error diagnostic on that word
    (columns in UTF-16 units, like Lean);
  - a line starting `#check ` (leanpool's verdict trailer) gets one
    information message, and a line containing `#print axioms NAME` the
    answer native Lean gives for a declaration without axioms
    (`'NAME' does not depend on any axioms`);
  - `SLEEP` never finishes elaborating;
  - `CRASH` writes to stderr and exits 3;
  - `PANIC` writes Lean's `INTERNAL PANIC: out of memory` to stderr in two
    pieces (split inside the marker) and then hangs without exiting, as
    the WASM build does at its 2 GiB heap cap (which real Lean reaches
    only after minutes of allocation, so it cannot be produced on demand);
  - `FORK` starts a `sleep` child (same process group) first;
  - `FORGE:<kind>` first writes a frame the driver never asked for, as
    code running inside Lean could (the issue-10 attack wrote one from a
    smuggled `#eval`): `version` a publishDiagnostics for version
    2147483647, `uri` one for another document, `answer` an answer to
    request 999999, `junk` a frame whose body is not JSON, `note` an
    unknown notification; then elaborates as usual.
Odd versions publish diagnostics after the done progress, even ones
before, as Lean may do either.
"""
import json
import subprocess
import sys

out = sys.stdout.buffer
inp = sys.stdin.buffer
answered = []
released = []


def send(obj, noise=True):
    body = json.dumps(obj).encode()
    if noise:
        out.write(b"[DEBUG: noise before a frame] Content-\n")
    out.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    out.flush()


def read():
    length = None
    while True:
        line = inp.readline()
        if not line:
            sys.exit(0)
        line = line.strip()
        if not line:
            break
        k, v = line.split(b":", 1)
        if k.lower() == b"content-length":
            length = int(v)
    return json.loads(inp.read(length))


def utf16(s):
    return len(s.encode("utf-16-le")) // 2


def forge(uri, version, text):
    for kind in ("version", "uri", "answer", "junk", "note"):
        if "FORGE:" + kind not in text:
            continue
        if kind == "version":
            send({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics",
                  "params": {"uri": uri, "version": 2147483647, "diagnostics": []}})
        elif kind == "uri":
            send({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics",
                  "params": {"uri": "file:///elsewhere/Other.lean", "version": version, "diagnostics": []}})
        elif kind == "answer":
            send({"jsonrpc": "2.0", "id": 999999, "result": {}})
        elif kind == "junk":
            out.write(b"Content-Length: 5\r\n\r\nnot{}")
            out.flush()
        elif kind == "note":
            send({"jsonrpc": "2.0", "method": "$/lean/forged", "params": {}})


def elaborate(uri, version, text):
    forge(uri, version, text)
    if "FORK" in text:
        subprocess.Popen(["sleep", "1000"])
    if "PANIC" in text:
        import time
        sys.stderr.write("some output\nINTERNAL PA")
        sys.stderr.flush()
        time.sleep(0.2)
        sys.stderr.write("NIC: out of memory\n")
        sys.stderr.flush()
        time.sleep(1000)
    if "CRASH" in text:
        sys.stderr.write("boom: fake crash\n")
        sys.stderr.flush()
        sys.exit(3)
    lines = text.split("\n")
    send({"jsonrpc": "2.0", "method": "$/lean/fileProgress", "params": {
        "textDocument": {"uri": uri, "version": version},
        "processing": [{"range": {"start": {"line": 0, "character": 0},
                                  "end": {"line": len(lines), "character": 0}}, "kind": 1}]}})
    if "SLEEP" in text:
        return
    diags = []
    for i, line in enumerate(lines):
        if line.startswith("#check "):
            diags.append({"range": {"start": {"line": i, "character": 0}, "end": {"line": i, "character": 6}},
                          "severity": 3, "message": line[len("#check "):] + " : Prop"})
            continue
        if "#print axioms" in line:
            c = utf16(line[:line.find("#print")])
            name = line.split("#print axioms", 1)[1].strip()
            diags.append({"range": {"start": {"line": i, "character": c}, "end": {"line": i, "character": c + 6}},
                          "severity": 3, "message": f"'{name}' does not depend on any axioms"})
            continue
        j = line.find("bad")
        if j >= 0:
            c = utf16(line[:j])
            diags.append({"range": {"start": {"line": i, "character": c},
                                    "end": {"line": i, "character": c + 3}},
                          "severity": 1, "message": "unknown identifier 'bad'"})
    publish = {"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics",
               "params": {"uri": uri, "version": version, "diagnostics": diags}}
    done = {"jsonrpc": "2.0", "method": "$/lean/fileProgress", "params": {
        "textDocument": {"uri": uri, "version": version}, "processing": []}}
    if version % 2 == 0:
        send(publish)
        send(done)
    else:
        send(done)
        send(publish)


sys.stderr.write("[DEBUG: fake server on stderr]\n")
sys.stderr.flush()
out.write(b"[DEBUG:wasm] start-up chatter on stdout\n")
out.flush()
while True:
    msg = read()
    method = msg.get("method")
    if method is None:
        answered.append(msg.get("id"))
        continue
    params = msg.get("params", {})
    if method == "initialize":
        assert params["initializationOptions"]["hasWidgets"] is True
        # Like Lean's file worker: no answer to `initialize`.
        send({"jsonrpc": "2.0", "id": "srv-1", "method": "workspace/semanticTokens/refresh"})
    elif method == "textDocument/didOpen":
        assert params["dependencyBuildMode"] == "never"
        td = params["textDocument"]
        elaborate(td["uri"], td["version"], td["text"])
    elif method == "textDocument/didChange":
        td = params["textDocument"]
        elaborate(td["uri"], td["version"], params["contentChanges"][0]["text"])
    elif method == "textDocument/waitForDiagnostics":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {}})
    elif method == "$/lean/rpc/connect":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"sessionId": 12345678901234567890}})
    elif method == "$/lean/rpc/call":
        if params["sessionId"] != 12345678901234567890:
            send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32900, "message": "reconnect"}})
        else:
            send({"jsonrpc": "2.0", "id": msg["id"], "result": {
                "method": params["method"], "position": params["position"], "params": params["params"]}})
    elif method == "$/lean/rpc/release":
        released.extend(r["p"] for r in params["refs"])
    elif method == "test/released":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": released})
    elif method == "test/answered":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": answered})
    elif "id" in msg:
        send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "no " + method}})
