"""python3-websockets against the interop server.

Usage: /usr/bin/python3 ws_echo.py BASE_URL DEFLATE(0|1)
Echoes text, binary, 1 MiB and a fragmented message, pings, closes with
4000 and gets the server's 4001; prints OK or the first failure.
"""
import asyncio
import sys

import websockets


async def main(base, deflate):
    comp = "deflate" if deflate else None
    async with websockets.connect(base + "/ws", compression=comp, max_size=8 << 20) as ws:
        exts = ws.response_headers.get("Sec-WebSocket-Extensions", "")
        if ("permessage-deflate" in exts) != deflate:
            raise AssertionError("permessage-deflate negotiated: %r" % exts)
        text = "hello, uringws \u00b5\u00df\u4e16\u754c"
        for name, msg in (("text", text), ("binary", bytes([0, 1, 2, 0xfe, 0xff])), ("1 MiB", b"a" * (1 << 20))):
            await ws.send(msg)
            if await ws.recv() != msg:
                raise AssertionError(name + ": echo differs")
        await ws.send([text[:3], text[3:]])  # an iterable goes out as fragments
        if await ws.recv() != text:
            raise AssertionError("fragmented: echo differs")
        await asyncio.wait_for(await ws.ping(b"ping!"), 10)
        await ws.close(4000, "done")
        if ws.close_code != 4000:
            raise AssertionError("close 4000 came back as %r" % ws.close_code)
    async with websockets.connect(base + "/close", compression=comp) as ws2:
        await ws2.send("x")
        try:
            await ws2.recv()
        except websockets.exceptions.ConnectionClosed:
            pass
        if ws2.close_code != 4001 or ws2.close_reason != "bye":
            raise AssertionError("server close %r %r" % (ws2.close_code, ws2.close_reason))
    print("OK")


try:
    asyncio.run(asyncio.wait_for(main(sys.argv[1], sys.argv[2] == "1"), 30))
except Exception as e:  # report, do not trace
    print("FAIL %r" % e)
    sys.exit(1)
