"""The streamed ZIP: any `zipfile` reads it, and it is handed on as it is written, a chunk
at a time, so that memory holds about one chunk whatever the archive's size."""

import datetime as dt
import io
import os
import zipfile

from apps.console.zip_stream import zip_stream

MADE_AT = dt.datetime(2024, 5, 6, 7, 8, 10, tzinfo=dt.UTC)
CHUNK = 64 * 1024


class Member:
    """A member's chunks that count how many were read, and whether they were closed."""

    def __init__(self, count: int, *, compressible: bool = False):
        self.count, self.read, self.closed = count, 0, False
        self.compressible = compressible
        self.data = bytearray()

    def __iter__(self):
        try:
            for _ in range(self.count):
                chunk = b"a,b\n" * (CHUNK // 4) if self.compressible else os.urandom(CHUNK)
                self.read += 1
                self.data += chunk
                yield chunk
        finally:
            self.closed = True


def test_any_zip_reader_reads_the_stream():
    first, second = Member(3), Member(40, compressible=True)
    data = b"".join(zip_stream([("a.bin", first), ("b.csv", second)], made_at=MADE_AT))
    archive = zipfile.ZipFile(io.BytesIO(data))
    assert archive.namelist() == ["a.bin", "b.csv"] and archive.testzip() is None
    assert archive.read("a.bin") == first.data and archive.read("b.csv") == second.data
    assert archive.getinfo("a.bin").date_time == (2024, 5, 6, 7, 8, 10)
    assert archive.getinfo("b.csv").compress_size < len(second.data) / 20  # deflated


def test_the_archive_is_handed_on_as_it_is_written():
    member = Member(100)  # 6.4 MB that deflate cannot shrink
    stream = zip_stream([("big.bin", member)], made_at=MADE_AT)
    pieces, read_when_first_piece = [], None
    for piece in stream:
        if read_when_first_piece is None:
            read_when_first_piece = member.read
        pieces.append(len(piece))
    assert read_when_first_piece <= 2  # the first bytes leave before the member is read
    assert len(pieces) >= 90 and max(pieces) < 3 * CHUNK  # never the whole archive at once
    assert sum(pieces) > 100 * CHUNK


def test_closing_the_archive_closes_the_member_being_read():
    member = Member(100)
    stream = zip_stream([("big.bin", member), ("never.bin", Member(1))], made_at=MADE_AT)
    next(stream), next(stream)
    stream.close()
    assert member.closed and member.read < 100
