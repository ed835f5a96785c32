import asyncio

import pytest

from wire import FrameTooLarge, IncompleteFrame, LengthPrefixedCodec, LineCodec


def fed_reader(data: bytes, eof: bool = True, limit: int = 2 ** 16) -> asyncio.StreamReader:
    reader = asyncio.StreamReader(limit=limit)
    reader.feed_data(data)
    if eof:
        reader.feed_eof()
    return reader


@pytest.mark.asyncio
async def test_roundtrip_several_frames_from_one_buffer():
    codec = LengthPrefixedCodec()
    reader = fed_reader(codec.encode_many([b"a", b"", b"hello" * 100]))
    assert await codec.read_frame(reader) == b"a"
    assert await codec.read_frame(reader) == b""
    assert await codec.read_frame(reader) == b"hello" * 100
    assert await codec.read_frame(reader) is None


@pytest.mark.asyncio
@pytest.mark.parametrize("cut", [2, 4 + 3])
async def test_truncated_frame_raises_incomplete(cut):
    codec = LengthPrefixedCodec()
    data = codec.encode(b"0123456789")[:cut]
    with pytest.raises(IncompleteFrame) as info:
        await codec.read_frame(fed_reader(data))
    expected_partial = data if cut < 4 else data[4:]
    assert info.value.partial == expected_partial


@pytest.mark.asyncio
async def test_oversized_frame_is_rejected_before_reading_the_body():
    codec = LengthPrefixedCodec(max_size=16)
    big = LengthPrefixedCodec().encode(b"x" * 17)
    with pytest.raises(FrameTooLarge) as info:
        await codec.read_frame(fed_reader(big[:4], eof=False))
    assert (info.value.size, info.value.limit) == (17, 16)
    with pytest.raises(FrameTooLarge):
        codec.encode(b"x" * 17)


def test_decode_buffer_keeps_the_partial_tail():
    codec = LengthPrefixedCodec()
    buf = bytearray(codec.encode_many([b"one", b"two"]) + codec.encode(b"three")[:6])
    assert codec.decode_buffer(buf) == [b"one", b"two"]
    assert bytes(buf) == codec.encode(b"three")[:6]
    buf += codec.encode(b"three")[6:]
    assert codec.decode_buffer(buf) == [b"three"]
    assert buf == bytearray()


@pytest.mark.asyncio
async def test_frames_over_loopback_keep_their_order(frame_server, open_streams):
    codec = LengthPrefixedCodec()
    reader, writer = await open_streams("127.0.0.1", frame_server.port)
    payloads = [f"frame-{i}".encode() * (i + 1) for i in range(50)]
    writer.write(codec.encode_many(payloads))
    await writer.drain()
    got = [await asyncio.wait_for(codec.read_frame(reader), 20) for _ in payloads]
    assert got == payloads


@pytest.mark.asyncio
async def test_frame_written_byte_by_byte_arrives_whole(frame_server, open_streams):
    codec = LengthPrefixedCodec()
    reader, writer = await open_streams("127.0.0.1", frame_server.port)
    for byte in codec.encode(b"split across many segments"):
        writer.write(bytes([byte]))
        await writer.drain()
    assert await asyncio.wait_for(codec.read_frame(reader), 20) == b"split across many segments"


@pytest.mark.asyncio
async def test_line_codec_strips_crlf_and_lf():
    codec = LineCodec()
    reader = fed_reader(b"first\r\nsecond\nthird")
    assert await codec.read_line(reader) == "first"
    assert await codec.read_line(reader) == "second"
    with pytest.raises(IncompleteFrame):
        await codec.read_line(reader)


@pytest.mark.asyncio
async def test_line_codec_limit():
    codec = LineCodec(max_line=8)
    with pytest.raises(FrameTooLarge):
        await codec.read_line(fed_reader(b"x" * 100 + b"\n", limit=32))
    with pytest.raises(FrameTooLarge):
        await codec.read_line(fed_reader(b"123456789\n"))
    with pytest.raises(FrameTooLarge):
        codec.encode("123456789")


def test_line_codec_refuses_embedded_newlines():
    with pytest.raises(ValueError):
        LineCodec().encode("two\nlines")


@pytest.mark.asyncio
async def test_line_echo_session(echo_server, open_streams):
    codec = LineCodec()
    reader, writer = await open_streams("127.0.0.1", echo_server.port)
    for line in ["hello", "UPPER", "shout", "QUIT"]:
        writer.write(codec.encode(line))
    await writer.drain()
    got = [await asyncio.wait_for(codec.read_line(reader), 20) for _ in range(4)]
    assert got == ["hello", "OK", "SHOUT", "BYE"]
    assert await asyncio.wait_for(codec.read_line(reader), 20) is None
