"""CPU-heavy payload helpers: build, compress, hash and parse records.

Typical services receive a few hundred KB of JSON lines, decompress them,
verify a digest and parse them.  Each step here has a plain function (for
threads) and an async wrapper.  ``hashlib`` and ``zlib`` release the GIL for
large buffers, so offloading them with :func:`asyncio.to_thread` really
lets the loop breathe; JSON parsing holds the GIL, so
:func:`parse_cooperatively` instead parses in batches and yields to the loop
between batches.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import zlib
from dataclasses import dataclass
from typing import Any, Dict, List


def make_records(count: int, *, seed: int = 0) -> List[Dict[str, Any]]:
    """Deterministic fake records (about 100 bytes each as JSON)."""
    rng = random.Random(seed)
    return [
        {
            "id": i,
            "user": f"user-{rng.randrange(10_000):05d}",
            "amount": round(rng.uniform(0, 1000), 2),
            "tags": [rng.choice("abcdefgh") for _ in range(3)],
            "ok": rng.random() > 0.1,
        }
        for i in range(count)
    ]


def encode_lines(records: List[Dict[str, Any]]) -> bytes:
    """Serialise *records* as newline-delimited JSON."""
    return b"".join(json.dumps(r, separators=(",", ":")).encode() + b"\n"
                    for r in records)


def digest(data: bytes, algorithm: str = "sha256") -> str:
    return hashlib.new(algorithm, data).hexdigest()


def compress(data: bytes, level: int = 6) -> bytes:
    return zlib.compress(data, level)


def decompress(data: bytes, *, max_size: int = 64 * 1024 * 1024) -> bytes:
    """Inflate *data*, refusing outputs larger than *max_size* bytes."""
    d = zlib.decompressobj()
    out = d.decompress(data, max_size)
    if d.unconsumed_tail:
        raise ValueError(f"decompressed payload exceeds {max_size} bytes")
    return out + d.flush()


def parse_lines(blob: bytes) -> List[Dict[str, Any]]:
    return [json.loads(line) for line in blob.splitlines() if line]


async def digest_async(data: bytes, algorithm: str = "sha256") -> str:
    """Hash in a worker thread (hashlib releases the GIL on big buffers)."""
    return await asyncio.to_thread(digest, data, algorithm)


async def parse_cooperatively(blob: bytes, *, batch: int = 500) -> List[Dict[str, Any]]:
    """Parse JSON lines on the loop, yielding every *batch* lines."""
    out: List[Dict[str, Any]] = []
    lines = blob.splitlines()
    for start in range(0, len(lines), batch):
        out.extend(json.loads(line) for line in lines[start:start + batch] if line)
        await asyncio.sleep(0)
    return out


@dataclass
class Envelope:
    """A compressed payload with the digest of its *uncompressed* content."""

    body: bytes
    sha256: str
    count: int

    @classmethod
    def seal(cls, records: List[Dict[str, Any]], level: int = 6) -> "Envelope":
        raw = encode_lines(records)
        return cls(body=compress(raw, level), sha256=digest(raw), count=len(records))


async def open_envelope(env: Envelope) -> List[Dict[str, Any]]:
    """Decompress in a thread, verify the digest, parse cooperatively."""
    raw = await asyncio.to_thread(decompress, env.body)
    actual = await digest_async(raw)
    if actual != env.sha256:
        raise ValueError("digest mismatch")
    records = await parse_cooperatively(raw)
    if len(records) != env.count:
        raise ValueError(f"expected {env.count} records, got {len(records)}")
    return records
