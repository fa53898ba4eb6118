// The direct-relay baseline of `npm run bench`: the smallest Node proxy in front of the provider
// simulator (the request piped up, the SSE response piped back, nothing parsed). What the
// gateway's overhead is compared with. Prints `RELAY_READY <url>`; RELAY_TARGET is the simulator.
import { createServer, request } from "node:http";

const target = new URL(process.env.RELAY_TARGET ?? "http://127.0.0.1:1");
const server = createServer((req, res) => {
  // A fresh upstream connection per request: a pooled one may be closing on the simulator's side.
  const up = request({ host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers, agent: false }, (upRes) => {
    res.writeHead(upRes.statusCode ?? 502, upRes.headers);
    upRes.pipe(res);
  });
  up.on("error", (err) => {
    process.stderr.write(`relay: upstream failed: ${err.message}\n`);
    res.destroy();
  });
  req.pipe(up);
});
server.listen(0, "127.0.0.1", () => {
  const a = server.address();
  if (a && typeof a === "object") console.log(`RELAY_READY http://127.0.0.1:${a.port}`);
});
process.once("SIGTERM", () => process.exit(0));
