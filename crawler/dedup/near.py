"""Near fingerprints: the Hamming distance of two simhashes, the four 16-bit blocks that
find every fingerprint within 3 bits of another (pigeonhole), and the in-memory index
built on them (``crawler.dedup.simhash`` computes the fingerprints)."""

from __future__ import annotations

import operator
from array import array
from collections.abc import Iterable

_BUCKETS = 1 << 16  # values of one 16-bit block


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


def nearest(fp: int, buckets: Iterable[array | None], limit: int) -> tuple[int, int] | None:
    """(distance, fingerprint) of the fingerprint nearest to `fp` in `buckets`, if closer
    than `limit`; among equals the first, in bucket order.

    Each bucket is checked by C-level iteration only,
    ``min(map(int.bit_count, map(fp.__xor__, bucket)))``, with no bytecode per
    candidate; the position of the best is searched for only in the bucket holding it.
    """
    xor, bit_count = fp.__xor__, int.bit_count
    best_distance, best_bucket = limit, None
    for bucket in buckets:
        if bucket:
            distance = min(map(bit_count, map(xor, bucket)))
            if distance < best_distance:
                best_distance, best_bucket = distance, bucket
                if distance == 0:
                    break
    if best_bucket is None:
        return None
    return best_distance, best_bucket[list(map(bit_count, map(xor, best_bucket))).index(best_distance)]


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
        hit = nearest(fp, (tables[0][fp & 0xFFFF], tables[1][(fp >> 16) & 0xFFFF],
                           tables[2][(fp >> 32) & 0xFFFF], tables[3][fp >> 48]), self.k + 1)
        if hit is None:
            return None
        found = hit[1]
        block0 = found & 0xFFFF
        bucket, keys = tables[0][block0], self._keys[block0]
        assert bucket is not None and keys is not None  # the hit was read from this bucket
        return keys[bucket.index(found)]

    def remove(self, fp: int, key: str) -> bool:
        """Forget one entry of fingerprint `fp` stored under `key` (a page's text that a
        newer version replaces); False when there is none."""
        fp = operator.index(fp)
        block0 = fp & 0xFFFF
        bucket, keys = self._tables[0][block0], self._keys[block0]
        if bucket is None or keys is None:
            return False
        at = next((i for i, (value, owner) in enumerate(zip(bucket, keys, strict=True))
                   if value == fp and owner == key), None)
        if at is None:
            return False
        del bucket[at], keys[at]
        for table, block in zip(self._tables[1:], blocks(fp)[1:], strict=True):
            table[block].remove(fp)  # type: ignore[union-attr]
        self._size -= 1
        return True
