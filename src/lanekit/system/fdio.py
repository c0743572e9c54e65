"""Reading a descriptor to its end and writing all of a buffer: the one implementation of
each, builtin modules only (the empty run's snapshot read goes through read_all, and this
module costs it nothing beyond itself: fsops, with its ctypes renames, stays off that path)."""

from __future__ import annotations

import os


def read_all(fd: int, size: int = 0) -> bytes:
    """Everything `fd` has left, to EOF (a file, or a pipe until its writers close it).

    `size` (a regular file's fstat size) sizes the first read: a regular file's read comes
    back short only at its end, so a first read shorter than the size+1 asked for is the whole
    file (one read, not a second one to see EOF); longer means it grew, and reads go on."""
    if size:
        data = os.read(fd, size + 1)
        if len(data) <= size:
            return data
        chunks = [data]
    else:
        chunks = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    return b"".join(chunks)


def write_all(fd: int, data: bytes) -> None:
    """Write all of `data` to `fd` (a short write goes on where it stopped)."""
    written = os.write(fd, data)
    if written < len(data):  # a short write: only for large data, or on a signal
        view = memoryview(data)[written:]
        while view:
            view = view[os.write(fd, view) :]
