"""A ZIP archive written as it is read, for downloads of any size in flat memory.

The standard library's `zipfile` writes to a sink that cannot seek, so it puts each member's
sizes and CRC in a data descriptor after its data instead of going back to its header; the
generator hands on whatever the sink holds after every chunk. Members are ZIP64 (their size
is not known before they are written, and a large run's judgments pass 4 GiB).
"""

import datetime as dt
import io
import zipfile
from collections.abc import Iterable, Iterator


class _Sink(io.RawIOBase):
    """Collects what `zipfile` writes until the generator takes it. Not seekable, so
    `zipfile` streams."""

    def __init__(self):
        self._buffer = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        self._buffer += data
        return len(data)

    def take(self) -> bytes:
        data = bytes(self._buffer)
        self._buffer.clear()
        return data


def zip_stream(
    members: Iterable[tuple[str, Iterable[bytes]]], *, made_at: dt.datetime
) -> Iterator[bytes]:
    """The archive of `members` ((name, chunks), ...), deflated, each stamped `made_at`.
    A member's chunks are read only when the archive reaches it, and closed (a COPY
    cancelled) if the archive is."""
    sink = _Sink()
    stamp = made_at.timetuple()[:6]
    with zipfile.ZipFile(sink, mode="w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, chunks in members:
            info = zipfile.ZipInfo(name, date_time=stamp)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16  # a regular file, readable by all, when unzipped
            chunks = iter(chunks)
            try:
                with archive.open(info, mode="w", force_zip64=True) as member:
                    for chunk in chunks:
                        member.write(chunk)
                        if data := sink.take():
                            yield data
            finally:
                if hasattr(chunks, "close"):
                    chunks.close()
            if data := sink.take():
                yield data
    yield sink.take()  # the central directory
