"""Near-duplicate fingerprints (64-bit simhash of word 3-grams) and the block index over them.

The near-copy tests check simhash's defining property rather than hand-picked cases:
for two texts whose shingle-count vectors are at angle theta, each fingerprint bit
differs with probability theta / pi, so the Hamming distance is about Binomial(64,
theta / pi). Each kind of near copy is made of 200 seeded pages and compared with
that prediction; the fixed thresholds below follow from it with wide margins.
"""

from __future__ import annotations

import math
import os
import random
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import simhash as simhash_pkg

from crawler.dedup.near import NearDupIndex, blocks, hamming
from crawler.dedup.simhash import (
    content_fingerprint,
    content_shingles,
    normalized_words,
    shingle_hash,
    shingles,
    text_fingerprint,
)

ROOT = Path(__file__).resolve().parent.parent
FOX = "The quick brown fox jumps over the lazy dog."
FOX_FINGERPRINT = 0x7B15B81AD6172F78  # hard-coded: a changed hash would silently split old crawls


# --- a deterministic generator of page text in one site's style ---------------------------------

_SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "sa", "te", "vi", "do", "pa",
              "re", "li", "mo", "su", "na", "ga", "be", "ti", "zo", "fe"]  # fmt: skip
_vocab_rng = random.Random(7)
VOCAB = sorted({"".join(_vocab_rng.choices(_SYLLABLES, k=_vocab_rng.randint(1, 4))) for _ in range(6000)})
_vocab_rng.shuffle(VOCAB)
ZIPF = [1 / (rank + 1) ** 1.05 for rank in range(len(VOCAB))]  # word frequencies like a natural language
SITE_BOILERPLATE = (
    "we use cookies to improve your experience on this site by continuing you agree "
    "to our privacy policy and terms of use related articles you might also like"
)
AD_BLOCK = (
    "sponsored offer get fifty percent off premium cloud hosting today with code "
    "save fifty at checkout limited time only click"
)


def _timestamp(rng: random.Random) -> str:
    return (
        f"last updated {rng.randint(2015, 2025)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d} "
        f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}"
    )


def make_page(rng: random.Random, words: int = 1500) -> list[str]:
    """Lines of a page: a timestamp line, paragraphs of Zipf-distributed words, site boilerplate."""
    lines = [_timestamp(rng)]
    count = 0
    while count < words:
        sentences = []
        for _ in range(rng.randint(2, 6)):
            sentence = rng.choices(VOCAB, ZIPF, k=rng.randint(8, 25))
            sentence[0] = sentence[0].capitalize()
            sentences.append(" ".join(sentence) + ".")
            count += len(sentence)
        lines.append(" ".join(sentences))
    lines.append(SITE_BOILERPLATE)
    return lines


def with_new_timestamp(rng: random.Random, lines: list[str]) -> list[str]:
    return [_timestamp(rng), *lines[1:]]


def with_ad_block(rng: random.Random, lines: list[str]) -> list[str]:
    assert len(AD_BLOCK.split()) == 20
    at = rng.randint(1, len(lines) - 1)
    return [*lines[:at], AD_BLOCK, *lines[at:]]


def with_word_edits(rng: random.Random, lines: list[str], fraction: float = 0.01) -> list[str]:
    """1% of the words, chosen at random, each replaced by a random vocabulary word."""
    words = "\n".join(lines).split(" ")
    for i in rng.sample(range(len(words)), round(fraction * len(words))):
        words[i] = rng.choice(VOCAB)
    return " ".join(words).split("\n")


def shingle_angle(a: str, b: str) -> float:
    """Angle between the shingle-count vectors of two texts: simhash's similarity measure."""
    ca, cb = Counter(shingles(a)), Counter(shingles(b))
    dot = sum(count * cb[s] for s, count in ca.items())
    norms = math.sqrt(sum(c * c for c in ca.values()) * sum(c * c for c in cb.values()))
    return math.acos(min(1.0, dot / norms))


def binomial_cdf(k: int, n: int, p: float) -> float:
    return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k + 1))


@pytest.fixture(scope="module")
def pages() -> list[list[str]]:
    rng = random.Random(11)
    return [make_page(rng) for _ in range(200)]


# --- the fingerprint --------------------------------------------------------------------------


def test_identical_texts_have_identical_fingerprints(pages):
    text = "\n".join(pages[0])
    same = text.encode().decode()  # an equal text, another object
    assert same is not text
    assert text_fingerprint(text) == text_fingerprint(same) == text_fingerprint(text)


def test_fingerprint_ignores_case_and_whitespace_layout():
    assert text_fingerprint(FOX) == text_fingerprint(
        "  the QUICK\tbrown\n\nfox jumps\u00a0over THE lazy dog. "
    )
    assert text_fingerprint("STRASSE und mehr") == text_fingerprint(
        "straße UND mehr"
    )  # case-folded, not lowered


def test_fingerprint_is_64_bit_and_has_a_known_value():
    assert text_fingerprint(FOX) == FOX_FINGERPRINT
    assert 0 <= text_fingerprint(FOX) < 1 << 64
    assert simhash_pkg.Simhash(shingles(FOX), hashfunc=shingle_hash).value == FOX_FINGERPRINT


def test_fingerprint_is_the_same_in_another_process_with_another_hash_seed():
    code = f"from crawler.dedup.simhash import text_fingerprint; print(text_fingerprint({FOX!r}))"
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert int(out.stdout) == FOX_FINGERPRINT


def test_shingles_are_three_word_windows_of_case_folded_words():
    assert shingles("A b  C\nd") == ["a b c", "b c d"]
    assert shingles(FOX)[-1] == "the lazy dog."  # punctuation stays on its word


def test_texts_shorter_than_three_words_are_one_shingle_of_their_words():
    assert shingles("Hello") == ["hello"]
    assert shingles(" Hello \n World ") == ["hello world"]
    assert text_fingerprint("Hello  WORLD") == text_fingerprint("hello world")
    assert text_fingerprint("hello world") != text_fingerprint("hello there")
    assert text_fingerprint("hello") == simhash_pkg.Simhash(["hello"], hashfunc=shingle_hash).value


def test_empty_text_has_fingerprint_zero_like_the_package_with_no_features():
    for text in ("", " ", "\n\t \u3000"):
        assert shingles(text) == []
        assert text_fingerprint(text) == 0
    assert simhash_pkg.Simhash([]).value == 0


def test_word_normalisation_equals_str_split_for_every_kind_of_whitespace():
    spaces = "".join(chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace())
    # non-spaces that share UTF-8 lead bytes with the non-ASCII spaces
    lookalikes = "\u200b\u2019\u20ac\u00e9\u00a9\u1680\u169a\u3001\u205e\u2060\u2027\u202a\u00df\u0130"
    alphabet = spaces + lookalikes + "aZ. 09\u0663"
    rng = random.Random(5)
    texts = [*spaces, *lookalikes, "a" + spaces + "b", "\ud800 lone surrogate"]
    texts += ["".join(rng.choices(alphabet, k=rng.randint(0, 12))) for _ in range(3000)]
    texts += ["".join(rng.choices(alphabet + "\n", k=rng.randint(150, 260))) for _ in range(300)]
    # The crawler's own form (one space between words, lines of blocks), short lines and
    # paragraphs, with digits and characters whose case folding is longer (ß, İ, ﬃ).
    words = ("ß12", "\u0130", "a9", "x", "0", "\ufb037", "\u0663")
    texts += ["\n".join(" ".join(rng.choices(words, k=rng.randint(1, 90))) for _ in range(rng.randint(1, 6)))
              for _ in range(300)]
    for text in texts:
        lines = text.split("\n")
        masked = "\n".join(line if len(line) >= 200 else re.sub("[0-9]", "0", line) for line in lines)
        expected = " ".join(masked.casefold().split()).encode("utf-8", "surrogatepass")
        assert normalized_words(text) == expected, repr(text)


def test_a_clock_line_or_a_counter_moves_no_bit():
    rng = random.Random(3)
    body = " ".join(rng.choice(("river", "stone", "market", "paper", "signal", "garden", "quiet", "late"))
                    for _ in range(40))
    a = f"Page generated 12:04:05 for visitor 8231\n{body}"
    b = f"Page generated 09:59:17 for visitor 8390\n{body}"
    assert text_fingerprint(a) == text_fingerprint(b) and content_fingerprint(a) == content_fingerprint(b)
    assert text_fingerprint(a) != text_fingerprint(a.replace("Page generated", "Made"))
    paragraph = "In 1998 the river rose 14 feet; " * 8  # a paragraph's numbers are its content
    assert text_fingerprint(paragraph) != text_fingerprint(paragraph.replace("14", "15"))


# --- near copies, unrelated pages -----------------------------------------------------------


def _near_copy_distances(pages, edit, seed):
    rng = random.Random(seed)
    distances, predicted_mean, predicted_within_3 = [], 0.0, 0.0
    for lines in pages:
        original, copy = "\n".join(lines), "\n".join(edit(rng, lines))
        assert original != copy
        distances.append(hamming(text_fingerprint(original), text_fingerprint(copy)))
        p = shingle_angle(original, copy) / math.pi
        predicted_mean += 64 * p / len(pages)
        predicted_within_3 += binomial_cdf(3, 64, p) / len(pages)
    mean = sum(distances) / len(distances)
    within_3 = sum(d <= 3 for d in distances) / len(distances)
    # simhash's property: bits differ independently with probability angle / pi
    assert mean == pytest.approx(predicted_mean, rel=0.15)
    assert within_3 == pytest.approx(predicted_within_3, abs=0.1)
    return distances, within_3


def test_changed_timestamp_line_is_within_distance_3_on_most_pages(pages):
    distances, within_3 = _near_copy_distances(pages, with_new_timestamp, seed=1)
    # ~4 of ~1500 shingles change: 1.5 bits expected, P(> 3 bits) ~ 7%
    assert within_3 >= 0.85
    assert max(distances) <= 8


def test_inserted_20_word_ad_block_is_within_distance_3_on_most_pages(pages):
    distances, within_3 = _near_copy_distances(pages, with_ad_block, seed=2)
    # ~22 new shingles among ~1500: 2.5 bits expected, P(> 3 bits) ~ 23%
    assert within_3 >= 0.65
    assert sum(d <= 6 for d in distances) / len(distances) >= 0.95


def test_one_percent_word_edits_move_about_5_bits_so_distance_3_misses_most(pages):
    distances, within_3 = _near_copy_distances(pages, with_word_edits, seed=3)
    # 15 edits x 3 shingles each = 3% of shingles: 5 bits expected. k = 3 finds only a
    # minority of such copies, k = 6 most; none comes near the ~32 bits of unrelated pages.
    assert 0.05 <= within_3 <= 0.45
    assert sum(d <= 6 for d in distances) / len(distances) >= 0.65
    assert max(distances) <= 14


def test_unrelated_pages_in_the_same_style_are_never_within_distance_3(pages):
    fps = [text_fingerprint("\n".join(lines)) for lines in pages[:100]]
    distances = [hamming(a, b) for i, a in enumerate(fps) for b in fps[i + 1 :]]
    assert len(distances) == 4950
    assert min(distances) > 6
    assert sum(distances) / len(distances) == pytest.approx(32, abs=2)


def test_no_fingerprint_bit_is_stuck():
    rng = random.Random(10)
    # 51 words: 49 shingles, an odd total weight, so no bit is a tie (a tie gives 0, as in the package)
    fps = [text_fingerprint(" ".join(rng.choices(VOCAB, k=51))) for _ in range(400)]
    for bit in range(64):
        share = sum(fp >> bit & 1 for fp in fps) / len(fps)
        assert 0.38 <= share <= 0.62, bit  # 0.5 +- 4.8 standard deviations


# --- compatibility with the simhash package ---------------------------------------------------


def test_fingerprint_equals_the_package_simhash_of_the_same_shingles(pages):
    rng = random.Random(4)
    texts = [
        FOX,
        "Ünïcödé wörds, ﬁne — \u2018quoted\u2019 text 中文 字符 and more words here",
        "la " * 1000,  # one shingle 998 times: the package's list form copes with any count
        *("\n".join(lines) for lines in rng.sample(pages, 5)),
        *(" ".join(rng.choices(VOCAB[:30], k=rng.randint(1, 60))) for _ in range(40)),
    ]
    for text in texts:
        features = shingles(text)
        assert text_fingerprint(text) == simhash_pkg.Simhash(features, hashfunc=shingle_hash).value
        counts = Counter(features)
        if max(counts.values()) <= 255:  # above that the package raises OverflowError on NumPy 2
            assert text_fingerprint(text) == simhash_pkg.Simhash(counts, hashfunc=shingle_hash).value


def test_content_fingerprint_weighs_paragraphs_as_the_package_counts_repeats(pages):
    rng = random.Random(5)
    paragraph = " ".join(rng.choices(VOCAB, k=60))  # over 200 characters: a paragraph line
    texts = [FOX, "x", "", f"Headline\n{paragraph}\nBy a writer\n{paragraph} more",
             *("\n".join(lines) for lines in rng.sample(pages, 5))]
    for text in texts:
        features = content_shingles(text)
        assert content_fingerprint(text) == simhash_pkg.Simhash(features, hashfunc=shingle_hash).value
    assert content_fingerprint(FOX) == text_fingerprint(FOX)  # no paragraph: the plain simhash
    story = f"{paragraph}\n{paragraph[::-1]}"
    one, two = f"Site A headline here\n{story}", f"Another site's title\n{story}\nPhoto: someone"
    assert hamming(content_fingerprint(one), content_fingerprint(two)) <= hamming(
        text_fingerprint(one), text_fingerprint(two))


def test_repeated_shingles_weigh_by_their_count():
    counts = Counter(shingles("a b c " * 100 + "d e f g h"))
    assert max(counts.values()) > 50  # the package's separate path for weights above 50
    package = simhash_pkg.Simhash(counts, hashfunc=shingle_hash)
    assert text_fingerprint("a b c " * 100 + "d e f g h") == package.value


def test_fingerprints_work_with_the_package_distance_and_index():
    near = FOX_FINGERPRINT ^ (1 << 3 | 1 << 30 | 1 << 60)
    assert simhash_pkg.Simhash(FOX_FINGERPRINT).distance(simhash_pkg.Simhash(near)) == 3
    assert hamming(FOX_FINGERPRINT, near) == 3
    index = simhash_pkg.SimhashIndex([("fox", simhash_pkg.Simhash(FOX_FINGERPRINT))], k=3)
    assert index.get_near_dups(simhash_pkg.Simhash(near)) == ["fox"]
    keys = list(index.get_keys(simhash_pkg.Simhash(FOX_FINGERPRINT)))
    assert keys == [f"{block:x}:{i:x}" for i, block in enumerate(blocks(FOX_FINGERPRINT))]


# --- the block index --------------------------------------------------------------------------


def _flip(fp: int, bits: tuple[int, ...]) -> int:
    for bit in bits:
        fp ^= 1 << bit
    return fp


def test_blocks_are_16_bit_slices_least_significant_first():
    assert blocks(0x0123_4567_89AB_CDEF) == (0xCDEF, 0x89AB, 0x4567, 0x0123)
    rng = random.Random(6)
    for _ in range(2000):
        fp = rng.getrandbits(64)
        near = _flip(fp, tuple(rng.sample(range(64), rng.randint(0, 3))))
        assert any(a == b for a, b in zip(blocks(fp), blocks(near), strict=True))  # pigeonhole


NEAR_FLIPS = [(0,), (17,), (40,), (63,), (0, 1), (15, 16), (31, 47), (0, 1, 2), (48, 55, 63),
              (5, 21, 37), (20, 40, 60), (16, 32, 48)]  # fmt: skip
FAR_FLIPS = [(0, 16, 32, 48), (0, 1, 2, 3), (60, 61, 62, 63), (15, 31, 47, 63), (1, 2, 3, 4, 5),
             tuple(range(0, 64, 4))]  # fmt: skip


@pytest.fixture(scope="module")
def big_index() -> tuple[NearDupIndex, list[int]]:
    rng = random.Random(8)
    index = NearDupIndex()
    stored = [rng.getrandbits(64) for _ in range(200_000)]
    for i, fp in enumerate(stored):
        index.add(fp, f"page-{i}")
    return index, stored


def test_index_finds_exact_and_near_fingerprints_in_all_four_blocks(big_index):
    index, stored = big_index
    assert len(index) == 200_000
    for i in range(0, 200_000, 20_000):
        assert index.find(stored[i]) == f"page-{i}"
        for flips in NEAR_FLIPS:
            assert index.find(_flip(stored[i], flips)) == f"page-{i}", flips


def test_index_does_not_find_distance_4_or_more(big_index):
    index, stored = big_index
    for i in range(0, 200_000, 20_000):
        for flips in FAR_FLIPS:
            assert index.find(_flip(stored[i], flips)) is None, flips


def test_index_answers_like_a_brute_force_scan(big_index):
    _, stored = big_index
    rng = random.Random(9)
    subset = stored[:3000]
    small = NearDupIndex()
    for i, fp in enumerate(subset):
        small.add(fp, str(i))
    queries = [_flip(rng.choice(subset), tuple(rng.sample(range(64), rng.randint(0, 6)))) for _ in range(300)]
    queries += [rng.getrandbits(64) for _ in range(50)]
    for query in queries:
        nearest = min(hamming(query, fp) for fp in subset)
        key = small.find(query)
        if nearest <= 3:
            assert key is not None and hamming(query, subset[int(key)]) == nearest
        else:
            assert key is None


def test_index_prefers_exact_then_nearest():
    base = 0xDEAD_BEEF_0BAD_F00D
    index = NearDupIndex()
    index.add(_flip(base, (5, 6)), "two-away")
    index.add(_flip(base, (40,)), "one-away")
    assert index.find(base) == "one-away"
    index.add(base, "exact")
    index.add(base, "exact-again")
    assert index.find(base) == "exact"
    assert index.find(_flip(base, (5,))) == "two-away"  # 1 from two-away, 2 from exact, 3 from one-away
    assert len(index) == 4


def test_index_with_smaller_k_and_bad_arguments():
    base = 0x0123_4567_89AB_CDEF
    index = NearDupIndex(k=1)
    index.add(base, "a")
    assert index.find(_flip(base, (9,))) == "a"
    assert index.find(_flip(base, (9, 10))) is None
    assert NearDupIndex().find(base) is None
    with pytest.raises(ValueError):
        NearDupIndex(k=4)
    with pytest.raises(ValueError):
        index.add(-1, "negative")
    with pytest.raises(ValueError):
        index.add(1 << 64, "too wide")
    with pytest.raises(ValueError):
        index.find(-1)
    with pytest.raises(TypeError):
        index.add(1.0, "float")


def test_index_takes_numpy_integers():
    index = NearDupIndex()
    index.add(np.uint64(FOX_FINGERPRINT), "fox")
    assert index.find(np.uint64(FOX_FINGERPRINT ^ 1 << 63)) == "fox"
