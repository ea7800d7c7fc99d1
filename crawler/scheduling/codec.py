"""Requests as JSON (never pickles): what a frontier backend stores for each URL."""

from __future__ import annotations

import json
from typing import Any

from scrapy import Request, Spider
from scrapy.utils.request import request_from_dict

from crawler.frontier.failure import FetchFailure

#: request.meta: (fingerprint, lease token) of the URL the frontier handed out.
LEASE_META = "_frontier_lease"
#: request.meta: why the URL failed (fetch or processing); the frontier retries it later.
FAILED_META = "frontier_failed"
#: request.meta: failures of the URL so far, kept in the stored request across retries.
ATTEMPTS_META = "frontier_attempts"

#: request.meta: the URL was not done on purpose (max_pages, a download cancelled at close):
#: its lease is kept, and the frontier hands it out again on resume.
KEEP_LEASE_META = "frontier_keep_lease"


def keep_lease(request: Request) -> None:
    """The URL of ``request`` is not done, on purpose: fetched again on resume."""
    request.meta[KEEP_LEASE_META] = True


#: request.meta: the URL was not done for a reason of this worker's (its store has no room):
#: queued again at once, its attempts not spent.
REQUEUE_META = "frontier_requeue"


def requeue(request: Request) -> None:
    """The URL of ``request`` is queued again at once, not counted as a failed attempt."""
    request.meta[REQUEUE_META] = True


def mark_failed(request: Request, failure: FetchFailure) -> None:
    """The URL of ``request`` failed (fetch or processing): its frontier retries it. The
    first failure marked is the one that counts."""
    request.meta.setdefault(FAILED_META, failure)


# Meta keys set for one fetch; meaningless once the request is stored.
_RUNTIME_META = frozenset(
    {"download_slot", "download_latency", LEASE_META, FAILED_META, "_frontier_fetch", "_frontier_uploads",
     REQUEUE_META}
)


# Values JSON holds as they are: no need to try them (most meta values are depths and flags).
_SCALARS = frozenset({int, float, str, bool, type(None)})


def _json_safe(mapping: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    safe, dropped = {}, []
    for key, value in mapping.items():
        if key in _RUNTIME_META:
            continue
        if type(value) in _SCALARS:
            safe[key] = value
            continue
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            dropped.append(key)
        else:
            safe[key] = value
    return safe, dropped


# Request.to_dict values that are the constructor's defaults: left out of the JSON.
_DEFAULTS: dict[str, object] = {
    "callback": None, "errback": None, "headers": {}, "body": "", "cookies": {}, "meta": {},
    "encoding": "utf-8", "cb_kwargs": {}, "dont_filter": False, "method": "GET", "priority": 0, "flags": [],
}


def request_to_json(request: Request, spider: Spider | None) -> tuple[str, list[str]]:
    """(JSON text, names of meta/cb_kwargs keys dropped because JSON cannot hold them).
    Values equal to the Request defaults are left out, so a plain GET is its URL and
    callback name."""
    d = request.to_dict(spider=spider)
    d["meta"], dropped = _json_safe(d.get("meta") or {})
    d["cb_kwargs"], dropped_kwargs = _json_safe(d.get("cb_kwargs") or {})
    d["headers"] = {
        k.decode("latin-1"): [v.decode("latin-1") for v in vs]
        for k, vs in (d.get("headers") or {}).items()
    }
    d["body"] = (d.get("body") or b"").decode("latin-1")
    compact = {k: v for k, v in d.items() if k not in _DEFAULTS or v != _DEFAULTS[k]}
    return json.dumps(compact, separators=(",", ":")), dropped + dropped_kwargs


def request_from_json(text: str, spider: Spider | None) -> Request:
    d = json.loads(text)
    d["body"] = d.get("body", "").encode("latin-1")
    d["headers"] = {k: [v.encode("latin-1") for v in vs] for k, vs in d.get("headers", {}).items()}
    return request_from_dict(d, spider=spider)


def with_attempts_reset(text: str) -> str:
    """A stored request with its failure count cleared: a fresh retry chain."""
    d = json.loads(text)
    d.get("meta", {}).pop(ATTEMPTS_META, None)
    return json.dumps(d, separators=(",", ":"))


# Meta of one fetch, not carried into a revisit; headers Scrapy's middlewares set again.
_ONE_FETCH_META = frozenset({"retry_times", "sitemap_lastmod", KEEP_LEASE_META, REQUEUE_META, ATTEMPTS_META})
_DEFAULT_HEADERS = (b"User-Agent", b"Accept", b"Accept-Language", b"Accept-Encoding", b"Cookie",
                    b"If-None-Match", b"If-Modified-Since")


def revisit_request(request: Request, state: dict, conditional: bool) -> Request:
    """The request that fetches ``request``'s URL again, carrying the revisit ``state`` to
    compare with; ``conditional`` (for a spider that reads a 304): with ``If-None-Match``
    and ``If-Modified-Since`` from the stored validators."""
    meta = {k: v for k, v in request.meta.items()
            if not k.startswith(("_", "redirect_")) and k not in _ONE_FETCH_META}
    meta["revisit"] = state
    headers = request.headers.copy()
    for name in _DEFAULT_HEADERS:
        headers.pop(name, None)
    if conditional:
        meta["handle_httpstatus_list"] = sorted({*meta.get("handle_httpstatus_list", ()), 304})
        if state.get("etag"):
            headers[b"If-None-Match"] = state["etag"]
        if state.get("last_modified"):
            headers[b"If-Modified-Since"] = state["last_modified"]
    return request.replace(meta=meta, headers=headers)
