/**
 * One socket write per connection per event-loop turn. ioredis writes every command (and every
 * pipeline) to its socket at once, one syscall each; under load the gateway issues tens of
 * commands per loop turn on one connection (every run's XADD, PUBLISH, scripts), and on
 * loopback each write also runs the receiver's TCP path in the sender's CPU time. Corking the
 * socket at the first write of a turn and uncorking it in that turn's check phase
 * (`setImmediate`, after every timer and I/O callback of the turn; for a write made in a
 * check-phase callback, the next turn's) sends them as one `writev` instead. A command waits
 * at most for the rest of the current turn, which costs its reply little: a reply is read in
 * a later turn's poll phase either way. An idle process's turn is one callback, so its
 * commands go out at once. Measured in docs/benchmarks.md ("Coalesced Redis writes").
 */
import type { Socket } from "node:net";
import { Cluster, type Redis } from "ioredis";

const installed = new WeakSet<Socket>();

export function coalesceWrites(socket: Socket): void {
  if (installed.has(socket)) return;
  installed.add(socket);
  const write = socket.write;
  let corked = false;
  const flush = () => {
    corked = false;
    socket.uncork();
  };
  socket.write = function coalescedWrite(this: Socket, ...args: Parameters<Socket["write"]>): boolean {
    if (!corked) {
      corked = true;
      socket.cork();
      setImmediate(flush);
    }
    return write.apply(this, args);
  } as Socket["write"];
}

/** Coalesces the writes of every socket the client connects, reconnects included (and every node's in a cluster). */
export function coalesceClientWrites(client: Redis | Cluster): void {
  const onNode = (node: Redis) => {
    node.on("connect", () => coalesceWrites(node.stream));
    if (node.stream) coalesceWrites(node.stream);
  };
  if (client instanceof Cluster) {
    client.on("+node", onNode);
    for (const node of client.nodes("all")) onNode(node);
  } else {
    onNode(client);
  }
}
