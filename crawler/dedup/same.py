"""One test of "the same page" for every rule that asks it.

Two pages are the same when their texts are equal (SHA-256 of the whitespace-normalised
text), or when both have at least ``SIMHASH_MIN_WORDS`` words and their simhashes
(``content_fingerprint``) are within ``SIMHASH_MAX_DISTANCE`` bits: a clock line, a
visitor counter, an ad block or another site's template around the same story is no
change. Content seen (its index looks near neighbours up by this rule), learned
parameters (one value that changes the text makes a parameter relevant: a near
duplicate is no change), the soft-404 probe and duplicate-rate demotion (which counts
content seen's verdicts) all ask this one rule.
"""

from __future__ import annotations

from dataclasses import dataclass

from crawler.dedup.near import hamming

#: The hex digits of SHA-256 a stored text print keeps: 64 bits tell texts apart.
SHA_DIGITS = 16


@dataclass(frozen=True)
class TextPrint:
    """What the rule needs of a text: its SHA-256 (hex, or its first ``SHA_DIGITS``), and
    its simhash when it is long enough to be compared near (else None)."""

    sha256: str
    simhash: int | None = None

    def token(self) -> str:
        """A short string for a store: ``sha`` or ``sha:simhash`` (hex)."""
        sha = self.sha256[:SHA_DIGITS]
        return sha if self.simhash is None else f"{sha}:{self.simhash:016x}"

    @classmethod
    def from_token(cls, token: str) -> TextPrint:
        sha, _, simhash = token.partition(":")
        return cls(sha, int(simhash, 16) if simhash else None)


@dataclass(frozen=True)
class SameText:
    """The rule, with ``SIMHASH_MAX_DISTANCE`` and ``SIMHASH_MIN_WORDS``."""

    max_distance: int = 3
    min_words: int = 20

    def comparable(self, words: int) -> bool:
        """Whether a text of ``words`` words may be a near copy (not only an exact one)."""
        return words >= self.min_words

    def print(self, sha256: str, simhash: int | None, words: int) -> TextPrint:
        """The print of a text: its simhash kept only when the text is comparable."""
        return TextPrint(sha256, simhash if simhash is not None and self.comparable(words) else None)

    def same(self, a: TextPrint, b: TextPrint) -> bool:
        """Whether two texts are the same page's: equal, or both comparable and near."""
        digits = min(len(a.sha256), len(b.sha256))
        if a.sha256[:digits] == b.sha256[:digits]:
            return True
        if a.simhash is None or b.simhash is None:
            return False
        return hamming(a.simhash, b.simhash) <= self.max_distance

    def same_tokens(self, a: str, b: str) -> bool:
        return self.same(TextPrint.from_token(a), TextPrint.from_token(b))
