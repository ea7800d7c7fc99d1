"""Requests as JSON (never pickles): what a frontier backend stores for each URL."""

from __future__ import annotations

import json
from typing import Any

from scrapy import Request, Spider
from scrapy.utils.request import request_from_dict

# Meta keys Scrapy sets for one fetch; meaningless once the request is stored.
_RUNTIME_META = frozenset({"download_slot", "download_latency", "_frontier_lease", "_frontier_fetch"})


def _json_safe(mapping: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    safe, dropped = {}, []
    for key, value in mapping.items():
        if key in _RUNTIME_META:
            continue
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            dropped.append(key)
        else:
            safe[key] = value
    return safe, dropped


def request_to_json(request: Request, spider: Spider | None) -> tuple[str, list[str]]:
    """(JSON text, names of meta/cb_kwargs keys dropped because JSON cannot hold them)."""
    d = request.to_dict(spider=spider)
    d["meta"], dropped = _json_safe(d.get("meta") or {})
    d["cb_kwargs"], dropped_kwargs = _json_safe(d.get("cb_kwargs") or {})
    d["headers"] = {
        k.decode("latin-1"): [v.decode("latin-1") for v in vs]
        for k, vs in (d.get("headers") or {}).items()
    }
    d["body"] = (d.get("body") or b"").decode("latin-1")
    for key in ("cookies", "flags"):
        if not d.get(key):
            d.pop(key, None)
    return json.dumps(d, separators=(",", ":")), dropped + dropped_kwargs


def request_from_json(text: str, spider: Spider | None) -> Request:
    d = json.loads(text)
    d["body"] = d.get("body", "").encode("latin-1")
    d["headers"] = {k: [v.encode("latin-1") for v in vs] for k, vs in d.get("headers", {}).items()}
    return request_from_dict(d, spider=spider)
