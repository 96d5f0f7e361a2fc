"""One output file written in key order from arrays that arrive in any order:

    spool = Spool(out / "train.bin", np.uint16, header_bytes=1024)
    spool.add(2, ids_of_data02)        # appended to a temporary file beside the output,
    spool.add(1, ids_of_data01)        # its place recorded: (key, offset, count)
    spool.finish(lambda total: header(total))  # -> the output: header, then key 1, key 2, ...

Arrays that came in key order make the temporary file the output (renamed, no copy); else it
is copied in key order. finish(header, pick) writes pick(key, array) of each array instead.
"""

import os
from pathlib import Path

import numpy as np

from .files import naming


class Spool:
    def __init__(self, path, dtype, header_bytes=0):
        self.path = Path(path)
        self.dtype = np.dtype(dtype)
        self.header_bytes = header_bytes
        self.places = []  # (key, byte offset, count), in arrival order
        self.total = 0  # ids added
        # hidden and pid-tagged like the project's temporaries: never taken for an output
        self.spool_path = self.path.with_name(f".{self.path.name}.{os.getpid()}.spool.tmp")
        self.file = open(self.spool_path, "xb")  # noqa: SIM115 (open until finish)
        self.file.write(bytes(header_bytes))

    def add(self, key, ids):
        """Append `ids` (cast to the dtype, little-endian) under `key`; a key comes once."""
        if any(key == k for k, _, _ in self.places):
            raise ValueError(f"{self.path.name}: key {key!r} added twice")
        ids = np.ascontiguousarray(ids, dtype=self.dtype.newbyteorder("<"))
        self.places.append((key, self.file.tell(), len(ids)))
        with naming(self.path):  # a full disk names the output
            self.file.write(memoryview(ids).cast("B"))  # no copy
        self.total += len(ids)

    def read(self, key):
        """The array added under `key`, read back from the temporary file."""
        if not self.file.closed:
            self.file.flush()
        _, offset, count = next(place for place in self.places if place[0] == key)
        ids = np.fromfile(self.spool_path, self.dtype.newbyteorder("<"), count, offset=offset)
        if len(ids) != count:
            raise OSError(f"{self.spool_path} is shorter than what was written")
        return ids

    def finish(self, header=None, pick=None):
        """Write header(total ids), then every array (or its pick) in key order; return the path."""
        try:
            with naming(self.path):  # a full disk names the output
                if pick is None and self.places == sorted(self.places, key=lambda p: p[0]):
                    self.file.seek(0)  # arrived in key order: the spool is the output
                    self.file.write(self._header(header, self.total))
                    self.file.close()
                    os.replace(self.spool_path, self.path)
                    return self.path
                self.file.close()
                with open(self.path, "xb") as out:
                    out.write(bytes(self.header_bytes))
                    total = 0
                    for key, _, _ in sorted(self.places, key=lambda place: place[0]):
                        ids = self.read(key) if pick is None else pick(key, self.read(key))
                        ids = np.ascontiguousarray(ids, self.dtype.newbyteorder("<"))
                        out.write(memoryview(ids).cast("B"))
                        total += len(ids)
                    self.total = total
                    out.seek(0)
                    out.write(self._header(header, total))
                return self.path
        finally:
            self.discard()

    def _header(self, header, total):
        head = b"" if header is None else header(total)
        if len(head) != self.header_bytes:
            raise ValueError(
                f"{self.path.name}: a header of {len(head)} bytes, room for {self.header_bytes}"
            )
        return head

    def discard(self):
        """Close and remove the temporary file."""
        self.file.close()
        if self.spool_path.exists():
            self.spool_path.unlink()
