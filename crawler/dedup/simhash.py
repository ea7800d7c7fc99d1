"""Near-duplicate content: the 64-bit simhash of a text's word shingles (the index of
fingerprints and their distance: ``crawler.dedup.near``).

The fingerprint follows the `simhash` package's (1e0n, 2.1.2) rule with a hash of our
own, and the package reproduces it bit for bit when given that hash:
``text_fingerprint(text) == simhash.Simhash(shingles(text), hashfunc=shingle_hash).value``.
So our values go straight into ``simhash.Simhash(value)``, ``Simhash.distance`` and
``SimhashIndex(objs, k=3)``, whose bucket keys are ``'%x:%x' % (near.blocks(fp)[i], i)``.

The package's rule, kept:

- each feature (a str) is hashed from its UTF-8 bytes to 64 bits;
- a feature of weight w counts w times (a list with repeats and a Counter of it give
  the same value);
- bit i of the fingerprint is 1 when the weighted number of feature hashes with bit i
  set is strictly more than half of the total weight (a tie gives 0);
- no features give 0 (``Simhash([]).value == 0``).

Why not the package's own hash (MD5 of each shingle): one C call per shingle is ~3 ms
of a 100 KB page's ~15,000 shingles, whatever the digest, and the package itself takes
40-55 ms for its default features (character 4-grams) and raises OverflowError on NumPy
2 once a feature's weight exceeds 255. ``shingle_hash`` is built from parts that NumPy
computes for all the words of a page at once (written here because no library hashes
thousands of short strings in one call): each word is a polynomial in a fixed odd
64-bit base over its bytes, finished by MurmurHash3's 64-bit mixer (fmix64), and a
shingle of words a b c is ``fmix64((a * M1 + b) * M2 + c)``, all modulo 2**64. A
100 KB page then takes ~2 ms (``bench/dedup.py``).
"""

from __future__ import annotations

import re

import numpy as np

from crawler.extract.html import Lines, single_spaced

__all__ = [
    "content_fingerprint",
    "content_shingles",
    "fingerprint_hashes",
    "mask_short_line_digits",
    "normalized_words",
    "shingle_hash",
    "shingles",
    "text_fingerprint",
]

SHINGLE_WORDS = 3
_MASK = (1 << 64) - 1

# The hash's constants: the polynomial base (odd), the shingle multipliers, fmix64's.
_BASE = 0x9E3779B97F4A7C15
_M1, _M2 = 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9
_F1, _F2 = 0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53

# ASCII characters that str.split() treats as whitespace, each made a plain space.
_ASCII_SPACES = bytes.maketrans(b"\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f", b" " * 9)
# ASCII digits, each made 0: in a str, in UTF-8 bytes, and with the whitespace above.
_DIGITS = str.maketrans("123456789", "0" * 9)
_DIGIT_BYTES = bytes.maketrans(b"123456789", b"0" * 9)
_ASCII_SPACES_AND_DIGITS = bytes.maketrans(b"\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f123456789", b" " * 9 + b"0" * 9)
_DIGIT = re.compile("[0-9]")
#: A line of the text this long (characters) is a paragraph: two sentences or so.
PARAGRAPH_CHARS = 200
# Per lead byte value: which bits of the row's 8 bytes are set, for counting bits per column.
_BYTE_BITS = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).astype(np.int64)


def _has_unicode_space(data: np.ndarray) -> bool:
    """Whether UTF-8 `data` holds a non-ASCII whitespace character (vectorised byte check)."""
    if len(data) < 2:
        return False
    lead = np.flatnonzero(data[:-1] == 0xC2)  # U+0085, U+00A0
    if lead.size and np.any((data[lead + 1] == 0x85) | (data[lead + 1] == 0xA0)):
        return True
    tail = data[:-2]
    for first, second, third in ((0xE1, 0x9A, 0x80), (0xE3, 0x80, 0x80)):  # U+1680, U+3000
        lead = np.flatnonzero(tail == first)
        if lead.size and np.any((data[lead + 1] == second) & (data[lead + 2] == third)):
            return True
    lead = np.flatnonzero(tail == 0xE2)  # U+2000..U+200A, U+2028, U+2029, U+202F; U+205F
    if lead.size:
        byte2, byte3 = data[lead + 1], data[lead + 2]
        general = (byte2 == 0x80) & ((byte3 <= 0x8A) | (byte3 == 0xA8) | (byte3 == 0xA9) | (byte3 == 0xAF))
        if np.any(general | ((byte2 == 0x81) & (byte3 == 0x9F))):
            return True
    return False


def mask_short_line_digits(text: str) -> str:
    """`text` with every ASCII digit of its short lines (under ``PARAGRAPH_CHARS``) made 0.

    A clock, a visitor counter or a date sits on a line of its own ("Page generated
    12:04:05 for visitor 8231"): masked, it moves no feature, so a page that differs
    from its last fetch only by it has the same simhash (its SHA-256 still differs). A
    paragraph's numbers are its content and stay.
    """
    if _DIGIT.search(text) is None:
        return text
    return "\n".join(line if len(line) >= PARAGRAPH_CHARS else line.translate(_DIGITS)
                     for line in text.split("\n"))


def normalized_words(text: str) -> bytes:
    """UTF-8 of the case-folded words of `text` joined by single spaces, the digits of
    its short lines masked (``mask_short_line_digits``).

    Equals ``" ".join(mask_short_line_digits(text).casefold().split()).encode()``
    (str.split's whitespace: the Unicode one). Fast path: the crawler's text is
    already one space between words, with a newline between blocks, so encoding and
    mapping ASCII whitespace to spaces gives the answer once a byte scan shows no
    doubled or non-ASCII whitespace (no scan of a ``Lines`` text: it has none). The
    digits are masked in the UTF-8 bytes, by the same table lookup (``bytes.translate``)
    as the whitespace: ASCII bytes are never part of a longer character, and case
    folding makes no digit, whitespace or line break of any other character, so the
    lines and digits of `text` are those of its folded bytes (0.4 ms less a
    documentation page than a ``str.translate`` of each line). Lone surrogates are
    encoded with 'surrogatepass' rather than raising.
    """
    folded = text.casefold()
    data = folded.encode("utf-8", "surrogatepass")
    if _DIGIT.search(text) is None:
        data = data.translate(_ASCII_SPACES)
    else:
        paragraphs = [i for i, size in enumerate(map(len, text.split("\n"))) if size >= PARAGRAPH_CHARS]
        if not paragraphs:
            data = data.translate(_ASCII_SPACES_AND_DIGITS)
        else:
            lines, masked = data.split(b"\n"), data.translate(_DIGIT_BYTES).split(b"\n")
            for i in paragraphs:
                masked[i] = lines[i]
            data = b"\n".join(masked).translate(_ASCII_SPACES)
    if not isinstance(text, Lines) and (
        b"  " in data
        or data[:1] == b" "
        or data[-1:] == b" "
        or (not folded.isascii() and _has_unicode_space(np.frombuffer(data, np.uint8)))
    ):
        data = " ".join(mask_short_line_digits(text).casefold().split()).encode("utf-8", "surrogatepass")
    return data


def shingles(text: str) -> list[str]:
    """The features `text_fingerprint` hashes, in text order, repeats kept.

    Words are the case-folded, whitespace-split words of `text`, the digits of its
    short lines masked (``normalized_words``); a shingle is 3
    consecutive words joined by one space. A text of 1 or 2 words is one shingle (its
    words joined), like the package's ``_slide``; an empty text has none.
    """
    data = normalized_words(text)
    if not data:
        return []
    words = data.decode("utf-8", "surrogatepass").split(" ")
    if len(words) < SHINGLE_WORDS:
        return [" ".join(words)]
    return list(map(" ".join, zip(words, words[1:], words[2:], strict=False)))


def _fmix(x: int) -> int:
    x ^= x >> 33
    x = x * _F1 & _MASK
    x ^= x >> 33
    x = x * _F2 & _MASK
    return x ^ x >> 33


def _word_hash(word: bytes) -> int:
    return _fmix(sum((byte + 1) * pow(_BASE, i, 1 << 64) for i, byte in enumerate(word)) & _MASK)


def shingle_hash(feature: bytes) -> int:
    """64-bit hash of one feature's UTF-8 bytes, as ``text_fingerprint`` computes it in bulk.

    Three words a b c hash as ``fmix64((h(a) * M1 + h(b)) * M2 + h(c))``; the lone
    feature of a 1- or 2-word text as h(its bytes). For ``simhash.Simhash(...,
    hashfunc=shingle_hash)``; slow (pure Python), the fingerprint never calls it.
    """
    words = feature.split(b" ")
    if len(words) != SHINGLE_WORDS:
        return _word_hash(feature)
    a, b, c = map(_word_hash, words)
    return _fmix(((a * _M1 + b) * _M2 + c) & _MASK)


class _Powers:
    """``_BASE ** i mod 2**64`` for i below the longest word met so far, grown by doubling."""

    table = np.array([1, _BASE], np.uint64)

    @classmethod
    def upto(cls, n: int) -> np.ndarray:
        while len(cls.table) < n:
            with np.errstate(over="ignore"):
                cls.table = np.concatenate((cls.table, cls.table * cls.table[-1] * np.uint64(_BASE)))
        return cls.table


def _fmix_array(x: np.ndarray) -> np.ndarray:
    x ^= x >> np.uint64(33)
    x *= np.uint64(_F1)
    x ^= x >> np.uint64(33)
    x *= np.uint64(_F2)
    x ^= x >> np.uint64(33)
    return x


def _feature_hashes(data: bytes) -> np.ndarray:
    """``shingle_hash`` of every shingle of normalised words `data`, in text order."""
    if not data:
        return np.empty(0, np.uint64)
    if data.count(b" ") < SHINGLE_WORDS - 1:
        return np.array([shingle_hash(data)], np.uint64)
    codes = np.frombuffer(data, np.uint8)
    is_space = codes == 32
    starts = np.concatenate(([0], np.flatnonzero(is_space) + 1))
    lengths = np.diff(starts, append=len(codes))  # each word with the space after it
    position = np.arange(len(codes)) - np.repeat(starts, lengths)
    terms = codes.astype(np.uint64) + np.uint64(1)
    terms[is_space] = 0
    with np.errstate(over="ignore"):
        terms *= _Powers.upto(int(lengths.max()))[position]
        words = _fmix_array(np.add.reduceat(terms, starts))
        return _fmix_array((words[:-2] * np.uint64(_M1) + words[1:-1]) * np.uint64(_M2) + words[2:])


def fingerprint_hashes(hashes: np.ndarray, weights: np.ndarray | None = None) -> int:
    """The simhash of 64-bit feature hashes, one per feature occurrence (uint64 array),
    each counted ``weights[i]`` times when weights (integers) are given.

    The package's rule in bulk: count per bit position how many hashes set it (a
    bincount per byte column, then a 256 x 8 table of the bits of each byte value),
    and set the bit when that count exceeds half.
    """
    count = len(hashes)
    if count == 0:
        return 0
    total = count if weights is None else int(weights.sum())
    rows = hashes.astype(">u8").view(np.uint8).reshape(count, 8)
    # byte j of a big-endian hash holds its bits 63 - 8j ... 56 - 8j, most significant first
    ones = np.concatenate([np.bincount(rows[:, j], weights, minlength=256).astype(np.int64) @ _BYTE_BITS
                           for j in range(8)])
    return int.from_bytes(np.packbits(ones * 2 > total).tobytes(), "big")


def text_fingerprint(text: str) -> int:
    """64-bit simhash of the text's word 3-gram shingles, each counted as often as it occurs.

    Equal to ``simhash.Simhash(shingles(text), hashfunc=shingle_hash).value`` (and to
    the package's value for a Counter of the shingles, where it copes with the
    weights). 0 for a text without words.
    """
    return fingerprint_hashes(_feature_hashes(normalized_words(text)))


#: A shingle that starts in a paragraph counts this many times in ``content_fingerprint``.
PARAGRAPH_WEIGHT = 8


def _line_sizes(text: str) -> tuple[np.ndarray, np.ndarray]:
    """(characters, words) of each line of ``text``, as ``len(line)`` and
    ``len(line.split())``. The extracted text has single spaces between words and no
    blank line: then both are counted in bulk over its UTF-8 bytes (characters are the
    bytes that do not continue one; words, the spaces plus one), 0.1 ms less than a
    loop over the 300 lines of a documentation page."""
    if not (isinstance(text, Lines) or single_spaced(text.replace("\n", " "))):
        lines = text.split("\n")
        return (np.fromiter(map(len, lines), np.int64, len(lines)),
                np.fromiter((len(line.split()) for line in lines), np.int64, len(lines)))
    data = np.frombuffer(text.encode("utf-8", "surrogatepass"), np.uint8)
    breaks = np.flatnonzero(data == 10)
    starts = np.concatenate(([0], breaks + 1))
    ends = np.append(breaks, len(data))
    chars = np.concatenate(([0], np.cumsum((data & 0xC0) != 0x80)))
    spaces = np.concatenate(([0], np.cumsum(data == 32)))
    return chars[ends] - chars[starts], spaces[ends] - spaces[starts] + 1


def _shingle_weights(text: str, shingles: int) -> np.ndarray | None:
    """Per shingle of ``text`` (in order), ``PARAGRAPH_WEIGHT`` when its first word is on
    a paragraph line, else 1; None when the text has no paragraph (all weights 1)."""
    chars, words = _line_sizes(text)
    paragraphs = chars >= PARAGRAPH_CHARS
    if not paragraphs.any():
        return None
    per_word = np.repeat(np.where(paragraphs, PARAGRAPH_WEIGHT, 1), words)
    return per_word[:shingles] if len(per_word) >= shingles else None


def content_fingerprint(text: str) -> int:
    """The simhash of a page's text as near-duplicates are told: ``text_fingerprint``
    with the shingles of its paragraphs (lines of ``PARAGRAPH_CHARS`` or more) counted
    ``PARAGRAPH_WEIGHT`` times each.

    The same story in two sites' templates differs by the short lines the templates
    leave around it (a headline, a byline, a caption, a list of section names): weighed
    down, they move fewer bits. Equal to ``simhash.Simhash(content_shingles(text),
    hashfunc=shingle_hash).value``; ``text_fingerprint`` when no line is a paragraph.
    """
    hashes = _feature_hashes(normalized_words(text))
    if len(hashes) < 2:
        return fingerprint_hashes(hashes)
    return fingerprint_hashes(hashes, _shingle_weights(text, len(hashes)))


def content_shingles(text: str) -> list[str]:
    """The features ``content_fingerprint`` hashes, repeated as it weighs them."""
    features = shingles(text)
    weights = _shingle_weights(text, len(features)) if len(features) > 1 else None
    if weights is None:
        return features
    counts = weights.tolist()
    return [feature for feature, weight in zip(features, counts, strict=True) for _ in range(weight)]
