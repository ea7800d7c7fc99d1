"""The leases one worker holds, and what each waits for before its URL is done."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from scrapy import Request

from crawler.context.outcomes import PageOutcome
from crawler.frontier.failure import FetchFailure
from crawler.scheduling.codec import FAILED_META, KEEP_LEASE_META, LEASE_META, REQUEUE_META
from crawler.store.durable import BATCH_PREFIX

Lease = tuple[int, int]  # (fingerprint, token)
_AWAITING = "_frontier_awaiting"  # request.meta: what its page waits for to be safely stored
_SAFE_KEPT = 4096  # names said safe that are remembered (for pages that hear of them late)


@dataclass
class Finished:
    """Leases whose requests the engine is done with, sorted by how each ends."""

    done: list[tuple[Request, int, int]] = field(default_factory=list)  # ack or revisit
    failed: list[tuple[Request, int, int, FetchFailure]] = field(default_factory=list)  # retry chain
    kept: int = 0  # not stored on purpose (max_pages): fetched again on resume
    requeued: list[tuple[Request, int, int]] = field(default_factory=list)  # store full: queued again


class LeaseBook:
    """Bookkeeping only (no I/O): the requests handed to the engine with their leases; the
    pages stored but not yet safe (their files still to be uploaded, or their fsync batch
    to come: a URL is done only once its page is safe); and the revisit state of judged
    pages."""

    def __init__(self) -> None:
        self._handed_out: list[tuple[Request, int, int]] = []
        self._waiting_files: dict[Lease, set[str]] = {}
        self._waiting_requests: dict[Lease, Request] = {}
        self._by_name: dict[str, set[Lease]] = {}
        self._safe: dict[str, None] = {}  # the latest _SAFE_KEPT names said safe, oldest first
        self._revisit_states: dict[Lease, dict] = {}

    def __len__(self) -> int:
        """Requests handed out and not finished."""
        return len(self._handed_out)

    @property
    def awaiting_store(self) -> int:
        """Leases whose pages the engine is done with, waiting to be safely stored."""
        return len(self._waiting_files)

    @property
    def awaiting_upload(self) -> int:
        """Of those, the ones waiting for an upload (not only for their fsync batch, which
        comes within a second whatever the load: a store keeping up still has some)."""
        return sum(any(not n.startswith(BATCH_PREFIX) for n in names)
                   for names in self._waiting_files.values())

    def hand_out(self, request: Request, fp: int, token: int) -> None:
        self._handed_out.append((request, fp, token))

    def leases(self) -> Iterator[Lease]:
        """Every lease this worker still holds (to renew)."""
        yield from ((fp, token) for _, fp, token in self._handed_out)
        yield from self._waiting_files

    def page_done(self, request: Request, outcome: PageOutcome) -> None:
        """The pipelines' outcome for the page of ``request``: the revisit state its lease
        ends with, and the names (uploads, fsync batches) it is safe once each of is."""
        lease = request.meta.get(LEASE_META)
        if outcome.revisit_state is not None and lease is not None:
            self._revisit_states[(lease[0], lease[1])] = outcome.revisit_state
        if outcome.stored and outcome.awaiting:
            request.meta.setdefault(_AWAITING, set()).update(outcome.awaiting)

    def revisit_state(self, lease: Lease) -> dict | None:
        """The state a finished lease's revisit starts from (once), or None: a plain ack."""
        return self._revisit_states.pop(lease, None)

    def finished(self, in_progress: set[Request]) -> Finished:
        """Take the requests no longer ``in_progress`` out of the book, sorted; those whose
        pages are not yet safe stay, until ``stored_safely`` lets them go."""
        still, out = [], Finished()
        for entry in self._handed_out:
            request, fp, token = entry
            if request in in_progress:
                still.append(entry)
            elif request.meta.get(REQUEUE_META):
                out.requeued.append(entry)
                self._revisit_states.pop((fp, token), None)
            elif failure := request.meta.get(FAILED_META):
                out.failed.append((request, fp, token, failure))
                self._revisit_states.pop((fp, token), None)
            elif request.meta.get(KEEP_LEASE_META):
                out.kept += 1
                self._revisit_states.pop((fp, token), None)
            elif files := {n for n in request.meta.get(_AWAITING, ()) if n not in self._safe}:
                self._waiting_files[(fp, token)] = files
                self._waiting_requests[(fp, token)] = request
                for name in files:
                    self._by_name.setdefault(name, set()).add((fp, token))
            else:
                out.done.append(entry)
        self._handed_out = still
        return out

    def stored_safely(self, name: str) -> list[tuple[Request, int, int]]:
        """``name`` (a file uploaded, an fsync batch) is safe: the leases whose pages were
        all waiting for it. Remembered, for pages whose requests finish after it."""
        self._safe[name] = None
        if len(self._safe) > _SAFE_KEPT:  # a page hears of its names within seconds
            del self._safe[next(iter(self._safe))]
        done = []
        for lease in self._by_name.pop(name, ()):
            waiting = self._waiting_files[lease]
            waiting.discard(name)
            if not waiting:
                del self._waiting_files[lease]
                done.append((self._waiting_requests.pop(lease), *lease))
        return done
