"""Thrift's compact protocol, read and written generically: enough to edit a Parquet footer.

A Parquet file ends with its metadata (``FileMetaData``) in Thrift's compact encoding. Pyarrow
reads it but cannot write an edited one, and :mod:`pipeline.store.splice` needs to move the
byte offsets of row groups encoded elsewhere. Here a struct is read into a :class:`Struct` that
keeps every field as read (id, wire type, value), so that writing it back gives the same bytes;
the caller changes the fields it knows by id and leaves the rest alone.

The encoding (Apache Thrift, ``doc/specs/thrift-compact-protocol.md``): a struct is a run of
fields, each a header byte (the field id's increase over the previous field in the high nibble,
or 0 and then the id as a zigzag varint; the wire type in the low nibble) and its value, ended by
a 0 byte; integers are zigzag varints, a bool field's value is its wire type (1 true, 2 false),
binary is a varint length and the bytes, a list a header (size and element type) and its values.
"""

from __future__ import annotations

import struct as _struct
from dataclasses import dataclass, field
from typing import Any

# Wire types of the compact protocol.
STOP, TRUE, FALSE, BYTE, I16, I32, I64, DOUBLE, BINARY, LIST, SET, MAP, STRUCT = range(13)
INTEGERS = (I16, I32, I64)


@dataclass
class Struct:
    """A Thrift struct as read: its fields in order, each ``[field id, wire type, value]``.

    A value is an int (integers, bytes), a bool, ``bytes`` (binary and strings, doubles as
    their 8 raw bytes), a :class:`Struct`, a list ``(element type, values)`` or a map ``(key
    type, value type, [(key, value), ...])``."""

    fields: list[list[Any]] = field(default_factory=list)

    def get(self, fid: int) -> Any:
        """The value of field ``fid``, or None when the struct does not have it."""
        for f in self.fields:
            if f[0] == fid:
                return f[2]
        return None

    def set(self, fid: int, value: Any) -> None:
        """Give field ``fid`` (which the struct has) a new value of the same wire type."""
        for f in self.fields:
            if f[0] == fid:
                f[2] = value
                return
        raise KeyError(f"the struct has no field {fid}")


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = memoryview(data)
        self.pos = 0

    def byte(self) -> int:
        b = self.data[self.pos]
        self.pos += 1
        return b

    def varint(self) -> int:
        shift = result = 0
        while True:
            b = self.byte()
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def take(self, n: int) -> bytes:
        out = bytes(self.data[self.pos : self.pos + n])
        if len(out) != n:
            raise ValueError("truncated Thrift data")
        self.pos += n
        return out

    def value(self, kind: int) -> Any:
        if kind in (TRUE, FALSE):  # a bool element of a list or map: one byte
            return self.byte() == TRUE
        if kind == BYTE:
            return _struct.unpack("b", self.take(1))[0]
        if kind in INTEGERS:
            return self.zigzag()
        if kind == DOUBLE:
            return self.take(8)
        if kind == BINARY:
            return self.take(self.varint())
        if kind in (LIST, SET):
            head = self.byte()
            size, elem = head >> 4, head & 0x0F
            if size == 15:
                size = self.varint()
            return (elem, [self.value(elem) for _ in range(size)])
        if kind == MAP:
            size = self.varint()
            if size == 0:
                return (0, 0, [])
            types = self.byte()
            k, v = types >> 4, types & 0x0F
            return (k, v, [(self.value(k), self.value(v)) for _ in range(size)])
        if kind == STRUCT:
            return self.struct()
        raise ValueError(f"unknown Thrift compact type {kind}")

    def struct(self) -> Struct:
        out = Struct()
        last = 0
        while True:
            head = self.byte()
            kind = head & 0x0F
            if kind == STOP:
                return out
            delta = head >> 4
            fid = last + delta if delta else self.zigzag()
            value = kind == TRUE if kind in (TRUE, FALSE) else self.value(kind)
            out.fields.append([fid, kind, value])
            last = fid


class _Writer:
    def __init__(self) -> None:
        self.out = bytearray()

    def varint(self, n: int) -> None:
        while True:
            if n < 0x80:
                self.out.append(n)
                return
            self.out.append((n & 0x7F) | 0x80)
            n >>= 7

    def zigzag(self, n: int) -> None:
        self.varint((n << 1) ^ (n >> 63))

    def value(self, kind: int, value: Any) -> None:
        if kind in (TRUE, FALSE):
            self.out.append(TRUE if value else FALSE)
        elif kind == BYTE:
            self.out += _struct.pack("b", value)
        elif kind in INTEGERS:
            self.zigzag(value)
        elif kind == DOUBLE:
            self.out += value
        elif kind == BINARY:
            self.varint(len(value))
            self.out += value
        elif kind in (LIST, SET):
            elem, values = value
            if len(values) < 15:
                self.out.append((len(values) << 4) | elem)
            else:
                self.out.append(0xF0 | elem)
                self.varint(len(values))
            for v in values:
                self.value(elem, v)
        elif kind == MAP:
            k, v, pairs = value
            self.varint(len(pairs))
            if pairs:
                self.out.append((k << 4) | v)
            for key, val in pairs:
                self.value(k, key)
                self.value(v, val)
        elif kind == STRUCT:
            self.struct(value)
        else:
            raise ValueError(f"unknown Thrift compact type {kind}")

    def struct(self, s: Struct) -> None:
        last = 0
        for fid, kind, value in s.fields:
            if kind in (TRUE, FALSE):
                kind = TRUE if value else FALSE
            delta = fid - last
            if 0 < delta <= 15:
                self.out.append((delta << 4) | kind)
            else:
                self.out.append(kind)
                self.zigzag(fid)
            if kind not in (TRUE, FALSE):
                self.value(kind, value)
            last = fid
        self.out.append(STOP)


def loads(data: bytes) -> Struct:
    """The struct encoded at the start of ``data``."""
    return _Reader(data).struct()


def dumps(s: Struct) -> bytes:
    """``s`` in the compact encoding."""
    w = _Writer()
    w.struct(s)
    return bytes(w.out)
