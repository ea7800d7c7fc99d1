"""crawler.net.decoding: every Content-Encoding layer decoded to a hard cap."""

from __future__ import annotations

import gzip
import zlib

import brotli
import pytest
from backports import zstd
from hostileweb import bombs
from hypothesis import given
from hypothesis import strategies as st

from crawler.net.decoding import DecodingError, codings, decode

TEXT = b"User-agent: *\nDisallow: /private/\n" * 500


def _raw_deflate(data: bytes) -> bytes:
    compressor = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


CODERS = {b"gzip": gzip.compress, b"x-gzip": gzip.compress, b"deflate": zlib.compress,
          b"br": brotli.compress, b"zstd": zstd.compress}


@pytest.mark.parametrize("coding", sorted(CODERS))
def test_each_coding_decodes_whole_under_the_cap_and_cut_at_it(coding):
    body = CODERS[coding](TEXT)
    assert decode(body, [coding], 0).body == TEXT
    assert decode(body, [coding], len(TEXT)) == decode(body, [coding], 0)
    cut = decode(body, [coding], 100)
    assert (cut.body, cut.cut) == (TEXT[:100], True)


def test_raw_deflate_as_some_servers_send_it():
    assert decode(_raw_deflate(TEXT), [b"deflate"], 0).body == TEXT


def test_layers_are_undone_outermost_first_and_unknown_ones_left():
    assert codings([b"gzip, br", b" identity"]) == [b"gzip", b"br"]
    body = brotli.compress(gzip.compress(TEXT))
    assert decode(body, codings([b"gzip, br"]), 0).body == TEXT
    left = decode(gzip.compress(TEXT), [b"rot13", b"gzip"], 0)
    assert (left.body, left.left) == (TEXT, (b"rot13",))


def test_gzip_members_and_zstd_frames_are_all_read():
    assert decode(gzip.compress(b"one ") + gzip.compress(b"two"), [b"gzip"], 0).body == b"one two"
    assert decode(zstd.compress(b"one ") + zstd.compress(b"two"), [b"zstd"], 0).body == b"one two"


def test_a_stream_cut_short_gives_what_it_holds_and_garbage_is_an_error():
    body = gzip.compress(TEXT)
    assert TEXT.startswith(decode(body[: len(body) // 2], [b"gzip"], 0).body)
    for coding in CODERS:
        with pytest.raises(DecodingError):
            decode(b"this is not compressed at all" * 4, [coding], 0)


@pytest.mark.parametrize("coding", ["br", "gzip", "gzip, gzip", "deflate"])
def test_a_bomb_decodes_to_the_cap_only(coding):
    decoded = decode(bombs()[coding], codings([coding.encode()]), 500 * 1024)
    assert decoded.cut and len(decoded.body) == 500 * 1024


@given(st.binary(max_size=2000), st.integers(min_value=1, max_value=3000),
       st.sampled_from(sorted(CODERS)))
def test_the_output_is_the_prefix_of_the_whole_and_never_over_the_cap(data, limit, coding):
    decoded = decode(CODERS[coding](data), [coding], limit)
    assert decoded.body == data[:limit]
    assert decoded.cut == (len(data) > limit)
