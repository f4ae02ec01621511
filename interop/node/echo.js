// node's ws client against the interop server: node echo.js BASE_URL DEFLATE(0|1)
// Echoes text, binary, 1 MiB and a fragmented message, pings, closes with
// 4000 and gets the server's 4001; prints OK or the first failure.
'use strict';
const WebSocket = require('ws');
const [base, deflate] = [process.argv[2], process.argv[3] === '1'];
const fail = (m) => { console.log('FAIL ' + m); process.exit(1); };
setTimeout(() => fail('timeout'), 30000).unref();

function open(path) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(base + path, { perMessageDeflate: deflate, maxPayload: 8 << 20 });
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });
}
const next = (ws, ev) => new Promise((resolve) => ws.once(ev, (...a) => resolve(a)));

async function echo(ws, name, data, binary, parts) {
  const got = next(ws, 'message');
  if (parts) {
    ws.send(data.subarray(0, 3), { binary, fin: false });
    ws.send(data.subarray(3), { binary, fin: true });
  } else {
    ws.send(data, { binary });
  }
  const [msg, isBinary] = await got;
  if (isBinary !== binary || !Buffer.from(msg).equals(data)) fail(name + ': echo differs');
}

(async () => {
  const ws = await open('/ws');
  if (ws.extensions.includes('permessage-deflate') !== deflate) fail('permessage-deflate negotiated: ' + ws.extensions);
  const text = Buffer.from('hello, uringws \u00b5\u00df\u4e16\u754c');
  await echo(ws, 'text', text, false);
  await echo(ws, 'binary', Buffer.from([0, 1, 2, 0xfe, 0xff]), true);
  await echo(ws, '1 MiB', Buffer.alloc(1 << 20, 'a'), true);
  await echo(ws, 'fragmented', text, false, true);
  const pong = next(ws, 'pong');
  ws.ping('ping!');
  const [p] = await pong;
  if (p.toString() !== 'ping!') fail('pong ' + p);
  const closed = next(ws, 'close');
  ws.close(4000, 'done');
  const [code] = await closed;
  if (code !== 4000) fail('close 4000 came back as ' + code);
  const ws2 = await open('/close');
  const closed2 = next(ws2, 'close');
  ws2.send('x');
  const [code2, reason2] = await closed2;
  if (code2 !== 4001 || reason2.toString() !== 'bye') fail('server close ' + code2 + ' ' + reason2);
  console.log('OK');
  process.exit(0);
})().catch((e) => fail(String(e)));
