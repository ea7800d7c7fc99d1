"""Responses that break HTTP, told apart from connections that drop.

Twisted's HTTP client reads a response's status line and headers as lines of at most
``HTTPClientParser.MAX_LENGTH`` bytes (16 KiB). At a longer one it closed the connection,
and the fetch failed with ``ConnectionDone``, like a server that hung up halfway through
an answer: retried as transient, then a dead letter. :func:`install` makes the parser raise
:class:`HeaderLineTooLong` instead. That error is one of Twisted's ``ParseError``\\ s, as a
malformed status line is, so the failure says that the server answered with something
that is not HTTP, which :func:`bad_response` finds.
"""

from __future__ import annotations

from twisted.web._newclient import HTTPClientParser, ParseError
from twisted.web.client import ResponseFailed


class HeaderLineTooLong(ParseError):
    """A status or header line longer than Twisted's parser reads."""


def _refuse_long_line(parser: HTTPClientParser, line: bytes) -> None:
    raise HeaderLineTooLong(f"a header line longer than {parser.MAX_LENGTH} bytes", line[:80])


def install() -> None:
    """Make Twisted's HTTP client fail a response with a header line that is too long as a
    :class:`HeaderLineTooLong`. This applies to the whole process, because the parser class
    is Twisted's own. Calling it again changes nothing."""
    setattr(HTTPClientParser, "lineLengthExceeded", _refuse_long_line)  # noqa: B010 - a patch of Twisted's class


def bad_response(error: BaseException) -> ParseError | None:
    """The HTTP parse error behind a failed download, or None. Scrapy raises a
    ``DownloadFailedError`` caused by Twisted's ``ResponseFailed``, which holds the error."""
    failed = error if isinstance(error, ResponseFailed) else error.__cause__
    if not isinstance(failed, ResponseFailed):
        return None
    return next((reason.value for reason in failed.reasons if isinstance(reason.value, ParseError)), None)
