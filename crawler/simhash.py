"""Near-duplicate content: 64-bit simhash of word shingles and an in-memory index for it.

The fingerprint is the `simhash` package's (1e0n, 2.1.2) for the same features, bit
for bit: ``text_fingerprint(text) == simhash.Simhash(shingles(text)).value``. The
package itself is not called: it takes ~10 ms for the ~15k shingles of a 100 KB page
(and 40-55 ms for its own default, the character 4-grams of the text), and raises
OverflowError on NumPy 2 once a feature's weight exceeds 255. This module computes
the same value in ~4.3 ms: the per-shingle MD5 stays, because it is the package's hash
and so what makes the values interchangeable (it is ~3.2 ms of the 4.3: one C call per
shingle); everything else is done once per page instead of once per feature.

The package's convention, which is what ``text_fingerprint`` reproduces:

- each feature (a str) is hashed as ``hashlib.md5(feature.encode('utf-8')).digest()``
  and the **last 8 bytes** of the 16-byte digest are its 64-bit hash, read big-endian;
- a feature of weight w counts w times (a list with repeats and a Counter of it give
  the same value);
- bit i of the fingerprint is 1 when the weighted number of feature hashes with bit i
  set is strictly more than half of the total weight (a tie gives 0);
- no features give 0 (``Simhash([]).value == 0``).

So our values go straight into ``simhash.Simhash(value)``, ``Simhash.distance`` and
``SimhashIndex(objs, k=3)``, whose bucket keys are ``'%x:%x' % (blocks(fp)[i], i)``.
"""

from __future__ import annotations

import operator
from array import array
from collections.abc import Iterable

import numpy as np

try:  # CPython's built-in MD5: half the per-call cost of OpenSSL's EVP for 20-byte inputs.
    from _md5 import md5 as _md5
except ImportError:  # pragma: no cover - CPython builds without it
    from hashlib import md5 as _md5
_digest = type(_md5(b"")).digest

__all__ = [
    "NearDupIndex",
    "blocks",
    "fingerprint_digests",
    "hamming",
    "normalized_words",
    "shingles",
    "text_fingerprint",
]

SHINGLE_WORDS = 3
BLOCK_BITS = 16
_BUCKETS = 1 << BLOCK_BITS

# ASCII characters that str.split() treats as whitespace, each made a plain space.
_ASCII_SPACES = bytes.maketrans(b"\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f", b" " * 9)
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
        second, third = data[lead + 1], data[lead + 2]
        general = (second == 0x80) & ((third <= 0x8A) | (third == 0xA8) | (third == 0xA9) | (third == 0xAF))
        if np.any(general | ((second == 0x81) & (third == 0x9F))):
            return True
    return False


def normalized_words(text: str) -> bytes:
    """UTF-8 of the case-folded words of `text` joined by single spaces.

    Equals ``" ".join(text.casefold().split()).encode()`` (str.split's whitespace: the
    Unicode one). Fast path: the crawler's text is already one space between words,
    with a newline between blocks, so encoding and mapping ASCII whitespace to spaces
    gives the answer once a byte scan shows no doubled or non-ASCII whitespace.
    Lone surrogates are encoded with 'surrogatepass' rather than raising.
    """
    folded = text.casefold()
    data = folded.encode("utf-8", "surrogatepass").translate(_ASCII_SPACES)
    if (
        b"  " in data
        or data[:1] == b" "
        or data[-1:] == b" "
        or (not folded.isascii() and _has_unicode_space(np.frombuffer(data, np.uint8)))
    ):
        data = " ".join(folded.split()).encode("utf-8", "surrogatepass")
    return data


def shingles(text: str) -> list[str]:
    """The features `text_fingerprint` hashes, in text order, repeats kept.

    Words are the case-folded, whitespace-split words of `text`; a shingle is 3
    consecutive words joined by one space. A text of 1 or 2 words is one shingle (its
    words joined), like the package's ``_slide``; an empty text has none.
    """
    return [feature.decode("utf-8", "surrogatepass") for feature in _features(normalized_words(text))]


def _features(data: bytes) -> Iterable[bytes]:
    """The UTF-8 shingles of normalised words `data` (see `shingles`)."""
    if not data:
        return ()
    words = data.split(b" ")
    if len(words) < SHINGLE_WORDS:
        return (data,)
    return map(b" ".join, zip(words, words[1:], words[2:], strict=False))


def fingerprint_digests(digests: bytes, count: int) -> int:
    """The simhash of `count` concatenated 16-byte MD5 digests, one per feature occurrence.

    The package's rule on the last 8 bytes of each digest, in bulk: count per bit
    position how many hashes set it (a bincount per byte column, then a 256 x 8 table
    of the bits of each byte value), and set the bit when that count exceeds half.
    """
    if count == 0:
        return 0
    rows = np.frombuffer(digests, np.uint8).reshape(count, 16)
    # hash byte j is digest byte 8 + j; its bits, most significant first, are fingerprint bits 63 - 8j ...
    ones = np.concatenate([np.bincount(rows[:, 8 + j], minlength=256) @ _BYTE_BITS for j in range(8)])
    return int.from_bytes(np.packbits(ones * 2 > count).tobytes(), "big")


def text_fingerprint(text: str) -> int:
    """64-bit simhash of the text's word 3-gram shingles, each counted as often as it occurs.

    Equal to ``simhash.Simhash(shingles(text)).value`` (and to ``Simhash(Counter(...))``
    where the package copes with the weights). 0 for a text without words.
    """
    digests = b"".join(map(_digest, map(_md5, _features(normalized_words(text)))))
    return fingerprint_digests(digests, len(digests) // 16)


def hamming(a: int, b: int) -> int:
    """Number of differing bits between two fingerprints."""
    return (a ^ b).bit_count()


def blocks(fp: int) -> tuple[int, int, int, int]:
    """The four 16-bit blocks of a 64-bit fingerprint, least significant first.

    Two fingerprints within Hamming distance 3 agree on at least one block (4 blocks,
    at most 3 of them touched), so looking a fingerprint up under each of its blocks
    finds every such neighbour. Block i is bits 16i..16i+15: the same order and split
    as ``simhash.SimhashIndex(k=3)``, whose key for table i is ``'%x:%x' % (block, i)``.
    """
    return (fp & 0xFFFF, (fp >> 16) & 0xFFFF, (fp >> 32) & 0xFFFF, (fp >> 48) & 0xFFFF)


class NearDupIndex:
    """Fingerprints within Hamming distance `k` (<= 3) of a query, from 4 block tables.

    Table t is a list of 65,536 buckets, one per value of block t (`blocks`); a bucket is
    an ``array('Q')`` of the fingerprints whose block t has that value. Keys sit in
    lists parallel to table 0's buckets: a hit found through any table is mapped to
    its key by ``table0[fp & 0xFFFF].index(fp)``. So an entry costs 4 x 8 bytes of
    fingerprints and one 8-byte list slot (plus its key string), with no Python object
    per fingerprint; array and list over-allocation and the 327,680 bucket objects of a
    full index bring that to ~100 bytes an entry at 1 million (bench/dedup.py).

    Cost of a lookup: the 4 buckets under the query's blocks are scanned. Blocks of
    unrelated fingerprints collide at random once a table holds more than 65,536
    entries, so a lookup sees ~4 n / 65,536 candidates, ~61 at n = 1,000,000. Each
    bucket is checked by C-level iteration only,
    ``min(map(int.bit_count, map(fp.__xor__, bucket)))``, with no bytecode per
    candidate; the position of the best candidate is searched for only in the bucket
    that holds it.
    """

    __slots__ = ("_keys", "_size", "_tables", "k")

    def __init__(self, k: int = 3) -> None:
        if not 0 <= k <= 3:
            raise ValueError(f"k must be 0..3 for 4 blocks of 16 bits (pigeonhole), got {k}")
        self.k = k
        self._size = 0
        self._tables: list[list[array | None]] = [[None] * _BUCKETS for _ in range(4)]
        self._keys: list[list[str] | None] = [None] * _BUCKETS

    def __len__(self) -> int:
        return self._size

    def add(self, fp: int, key: str) -> None:
        """Store fingerprint `fp` (0 <= fp < 2**64) under `key`; repeats are kept."""
        fp = operator.index(fp)  # a NumPy integer becomes an int
        if not 0 <= fp < 1 << 64:
            raise ValueError(f"fingerprint must be an unsigned 64-bit int, got {fp!r}")
        for table, block in zip(self._tables, blocks(fp), strict=True):
            bucket = table[block]
            if bucket is None:
                table[block] = array("Q", (fp,))
            else:
                bucket.append(fp)
        keys = self._keys[fp & 0xFFFF]
        if keys is None:
            self._keys[fp & 0xFFFF] = [key]
        else:
            keys.append(key)
        self._size += 1

    def find(self, fp: int) -> str | None:
        """Key of a stored fingerprint within distance k of `fp`: the nearest, an exact one first.

        Among equally near fingerprints, the one in the lowest block table wins; among
        repeats of one fingerprint, the first added.
        """
        fp = operator.index(fp)
        if not 0 <= fp < 1 << 64:
            raise ValueError(f"fingerprint must be an unsigned 64-bit int, got {fp!r}")
        tables = self._tables
        xor = fp.__xor__
        bit_count = int.bit_count
        best_distance = self.k + 1
        best_bucket = None
        for table, block in (
            (tables[0], fp & 0xFFFF),
            (tables[1], (fp >> 16) & 0xFFFF),
            (tables[2], (fp >> 32) & 0xFFFF),
            (tables[3], fp >> 48),
        ):
            bucket = table[block]
            if bucket is not None:
                distance = min(map(bit_count, map(xor, bucket)))
                if distance < best_distance:
                    best_distance, best_bucket = distance, bucket
                    if distance == 0:
                        break
        if best_bucket is None:
            return None
        found = best_bucket[list(map(bit_count, map(xor, best_bucket))).index(best_distance)]
        block0 = found & 0xFFFF
        return self._keys[block0][tables[0][block0].index(found)]  # type: ignore[index]
