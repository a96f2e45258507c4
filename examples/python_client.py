#!/usr/bin/env python3
"""A stdlib-only client for the leanpool daemon (Python 3.8+).

The daemon speaks JSON-RPC 2.0 over a Unix socket, one JSON object per line
(see docs/protocol.md). Copy this file next to your scorer, or run it:

    python3 examples/python_client.py --socket /tmp/leanpool.sock status
    python3 examples/python_client.py --socket /tmp/leanpool.sock check '{"text": "theorem t : 2 + 2 = 4 := by decide"}'
    python3 examples/python_client.py --socket /tmp/leanpool.sock gted \
        '{"a": {"content": "x"}, "b": {"content": "y"}, "mode": "paper"}'

From Python:

    from python_client import Client, LeanpoolError
    with Client("/tmp/leanpool.sock") as c:
        r = c.check("theorem t : 2 + 2 = 4 := by decide")
        print(r["status"], r["diagnostics"])
        v = c.verify("theorem t : 2 + 2 = 4 := sorry", "by decide")
        print(v["status"])  # "proved"
        # Many requests in flight on one connection, answers in input order:
        results = c.call_many([("check", {"text": t}) for t in texts])

A method error raises LeanpoolError (with .code, e.g. -32002 OVERLOADED:
retry later, .name, e.g. "OVERLOADED", and for WORKER_FAILED .cause, e.g.
"died_twice"); in call_many it is returned in place of that result.
"""

import argparse
import itertools
import json
import socket
import sys
import threading

# Error codes (docs/protocol.md).
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
REQUEST_TOO_LARGE = -32001
OVERLOADED = -32002
WORKER_FAILED = -32003
UNAUTHORIZED = -32004
SHUTTING_DOWN = -32005
SPAWN_FAILED = -32006
ERROR_NAMES = {
    PARSE_ERROR: "PARSE_ERROR",
    INVALID_REQUEST: "INVALID_REQUEST",
    METHOD_NOT_FOUND: "METHOD_NOT_FOUND",
    INVALID_PARAMS: "INVALID_PARAMS",
    INTERNAL_ERROR: "INTERNAL_ERROR",
    REQUEST_TOO_LARGE: "REQUEST_TOO_LARGE",
    OVERLOADED: "OVERLOADED",
    WORKER_FAILED: "WORKER_FAILED",
    UNAUTHORIZED: "UNAUTHORIZED",
    SHUTTING_DOWN: "SHUTTING_DOWN",
    SPAWN_FAILED: "SPAWN_FAILED",
}
# WORKER_FAILED's `data.cause` values (docs/protocol.md): only the first
# two say something about the statement.
FAILURE_CAUSES = ("died_twice", "lean_panic", "memory_cap", "protocol_violation", "lean_error", "unexpected_answer")


class LeanpoolError(Exception):
    """An error answer from the daemon."""

    def __init__(self, code, message, data=None):
        super().__init__("error %d: %s" % (code, message))
        self.code = code
        self.message = message
        self.data = data
        # None for a code this client does not know (a newer daemon's).
        self.name = ERROR_NAMES.get(code)
        # WORKER_FAILED's cause (see FAILURE_CAUSES), else None.
        self.cause = data.get("cause") if isinstance(data, dict) else None


class Client:
    """One connection to the daemon. Not thread-safe: use one per thread."""

    def __init__(self, path, timeout=None):
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.settimeout(timeout)
        self._sock.connect(path)
        self._reader = self._sock.makefile("rb")
        self._ids = itertools.count(1)

    def close(self):
        self._reader.close()
        self._sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _line(self, method, params):
        req_id = next(self._ids)
        req = {"jsonrpc": "2.0", "id": req_id, "method": method}
        if params is not None:
            req["params"] = params
        return req_id, (json.dumps(req, ensure_ascii=False) + "\n").encode("utf-8")

    def _answer(self):
        line = self._reader.readline()
        if not line:
            raise ConnectionError("the daemon closed the connection")
        return json.loads(line)

    @staticmethod
    def _unwrap(resp):
        err = resp.get("error")
        if err is not None:
            return LeanpoolError(err["code"], err["message"], err.get("data"))
        return resp.get("result")

    def call(self, method, params=None):
        """One request, one answer. Raises LeanpoolError on an error answer."""
        req_id, line = self._line(method, params)
        self._sock.sendall(line)
        while True:
            resp = self._answer()
            if resp.get("id") == req_id:
                break
            if resp.get("id") is None and "error" in resp:
                # Addressed to no request: about the connection (UNAUTHORIZED).
                break
        out = self._unwrap(resp)
        if isinstance(out, LeanpoolError):
            raise out
        return out

    def call_many(self, calls):
        """Pipelines [(method, params), ...] on this connection; returns the
        results in the same order (a LeanpoolError in place of a failed one).
        Sending runs in a thread so that a long list cannot deadlock against
        the daemon's answers."""
        ids, lines = [], []
        for method, params in calls:
            req_id, line = self._line(method, params)
            ids.append(req_id)
            lines.append(line)
        sender = threading.Thread(target=lambda: self._sock.sendall(b"".join(lines)), daemon=True)
        sender.start()
        answers = {}
        while len(answers) < len(ids):
            resp = self._answer()
            if resp.get("id") is None:
                raise self._unwrap(resp)
            answers[resp["id"]] = self._unwrap(resp)
        sender.join()
        return [answers[i] for i in ids]

    # Typed helpers: the params are the protocol's (docs/protocol.md).
    def check(self, text, timeout_ms=None):
        return self.call("check", _params(text=text, timeout_ms=timeout_ms))

    def verify(self, statement, proof, header="", timeout_ms=None):
        """A proof judged against a fixed statement: status "proved" only if
        the theorem exists with exactly the statement's type, without sorry,
        errors or new axioms (docs/protocol.md, "verify" and "Verdicts")."""
        return self.call("verify", _params(header=header or None, statement=statement, proof=proof, timeout_ms=timeout_ms))

    def normalize(self, text, timeout_ms=None):
        return self.call("normalize", _params(text=text, timeout_ms=timeout_ms))

    def opt(self, text, timeout_ms=None):
        return self.call("opt", _params(text=text, timeout_ms=timeout_ms))

    def gted(self, a, b, mode=None):
        return self.call("gted", _params(a=a, b=b, mode=mode))

    def status(self):
        return self.call("status")

    def ping(self, payload=None):
        return self.call("ping", payload)

    def shutdown(self):
        return self.call("shutdown")


def _params(**kw):
    return {k: v for k, v in kw.items() if v is not None}


def main(argv=None):
    ap = argparse.ArgumentParser(description="Call a leanpool daemon method and print the result as JSON.")
    ap.add_argument("--socket", required=True, help="the daemon's Unix socket")
    ap.add_argument("--timeout", type=float, default=None, help="socket timeout in seconds")
    ap.add_argument("method", help="check, verify, normalize, opt, gted, status, ping or shutdown (lease needs a tunnel: leanpool lsp --socket)")
    ap.add_argument("params", nargs="?", default=None, help="params as a JSON object")
    a = ap.parse_args(argv)
    params = json.loads(a.params) if a.params is not None else None
    try:
        with Client(a.socket, timeout=a.timeout) as c:
            result = c.call(a.method, params)
    except LeanpoolError as e:
        err = {"code": e.code, "message": e.message}
        if e.data is not None:
            err["data"] = e.data
        print(json.dumps({"error": err}), file=sys.stderr)
        return 1
    except OSError as e:
        print("cannot reach the daemon at %s: %s" % (a.socket, e), file=sys.stderr)
        return 2
    print(json.dumps(result, ensure_ascii=False, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
