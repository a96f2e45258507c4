"""The typed results follow docs/protocol.md: every documented result decodes,
reads as typed attributes, and gives back the same JSON."""

from __future__ import annotations

import json
import re

import pytest

from leanpool import methods
from leanpool._wire import Wire

from conftest import REPO

BLOCK = re.compile(r"```json (request|response)[^\n]*\n(.*?)\n```", re.S)


def documented_results():
    text = (REPO / "docs" / "protocol.md").read_text(encoding="utf-8")
    method = None
    for kind, body in BLOCK.findall(text):
        try:
            msg = json.loads(body)
        except ValueError:
            continue  # the deliberately broken request
        if kind == "request":
            method = msg.get("method")
        elif "result" in msg and method in methods.RESULT_TYPES:
            yield method, msg["result"]


CASES = list(documented_results())


def test_the_document_has_examples_of_every_typed_method():
    assert {m for m, _ in CASES} >= {"check", "verify", "normalize", "opt", "gted", "status", "shutdown"}


@pytest.mark.parametrize("method,result", CASES, ids=[f"{m}-{i}" for i, (m, _) in enumerate(CASES)])
def test_documented_result_round_trips(method, result):
    typed = methods.decode(method, result)
    assert isinstance(typed, methods.RESULT_TYPES[method])
    assert typed.to_dict() == result


def test_typed_access_to_a_documented_check():
    result = next(r for m, r in CASES if m == "check" and r["status"] == "error")
    r = methods.decode("check", result)
    assert r.status == "error"
    assert r.diagnostics[0].range.start.line == 0
    assert r.diagnostics[0].range.start.character == 39
    assert r.diagnostics[0].severity == "error"


def test_unknown_fields_are_kept_not_refused():
    r = methods.decode("check", {"status": "ok", "diagnostics": [], "new_field": {"x": 1}})
    assert r.status == "ok" and r.extra == {"new_field": {"x": 1}}
    assert r.to_dict()["new_field"] == {"x": 1}


def test_every_wire_type_is_typed_by_docs_names():
    # Field names are the wire's: a documented status answer has no member
    # the dataclasses do not know (else types.py is behind protocol.md).
    status = next(r for m, r in CASES if m == "status")
    typed = methods.decode("status", status)

    def unknown(obj):
        if isinstance(obj, Wire):
            yield from ((type(obj).__name__, k) for k in obj.extra)
            for v in vars(obj).values():
                yield from unknown(v)
        elif isinstance(obj, list):
            for v in obj:
                yield from unknown(v)

    assert list(unknown(typed)) == []
