"""Why a URL failed, as its retry chain reads it: a kind, told where the failure is seen,
and the words for the log and the dead letter. Pure code, no I/O."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class FailureKind(Enum):
    """What a failure says about its host, for ``RetryPolicy`` and the retry chain."""

    #: Anything a wait may mend (a 503, a callback that raised): retried along the chain.
    TRANSIENT = "transient"
    #: The host gave no answer at all (refused, timed out, did not resolve): it is held as a
    #: whole, one probe per delay of the chain, and given up after the last.
    UNREACHABLE = "unreachable"
    #: No wait mends it (a name that does not exist): confirmed once, then the host's end.
    PERMANENT = "permanent"
    #: Its reporter has retried it already (robots.txt unreachable through every attempt):
    #: a dead letter at once, with the host's queue.
    EXHAUSTED = "exhausted"


@dataclass(frozen=True)
class FetchFailure:
    """A failed fetch or processing of a URL: its ``kind`` and ``text`` (``Type: message``)."""

    kind: FailureKind
    text: str

    def __str__(self) -> str:
        return self.text
