/**
 * The `/aiserver.v1.*` paths the edge has no procedure for: the two the clients need answered
 * although their messages are not among the wire facts (an empty message is every message's
 * default), and every other one a clean `unimplemented`, counted per procedure so operators see
 * what clients ask for.
 */
import { ConnectError } from "@connectrpc/connect";
import { codeToHttpStatus, codeToString, errorToJsonBytes } from "@connectrpc/connect/protocol-connect";
import { endStreamFor } from "@byok/protocol";
import type { GatewayMetrics } from "@byok/telemetry";
import { notServed } from "../errors.js";
import { headersOf, respond, type NodeRequest, type NodeResponse } from "../http/json.js";

/** `NetworkService/IsConnected` (a 404 makes the IDE abort work) and `AuthService/GetEmail`. */
export const EMPTY_ANSWERS: ReadonlySet<string> = new Set(["/aiserver.v1.NetworkService/IsConnected", "/aiserver.v1.AuthService/GetEmail"]);

const PROCEDURE = /^\/aiserver\.v1\.([A-Za-z][A-Za-z0-9]{0,63}\/[A-Za-z][A-Za-z0-9]{0,63})$/;
/** Distinct unimplemented procedures with their own label; past that they count as `other`. */
const MAX_PROCEDURE_LABELS = 200;

export function procedureLabel(path: string): string {
  return PROCEDURE.exec(path)?.[1] ?? "other";
}

export function createProcedureFallback(opts: { metrics: GatewayMetrics; authenticate(headers: Headers): Promise<unknown> }) {
  const labels = new Set<string>();
  return async (req: NodeRequest, res: NodeResponse, path: string): Promise<void> => {
    const header = headersOf(req);
    req.resume();
    if (EMPTY_ANSWERS.has(path)) {
      try {
        await opts.authenticate(header);
      } catch (err) {
        const e = ConnectError.from(err);
        opts.metrics.controlPlaneCalls.inc({ procedure: procedureLabel(path), code: codeToString(e.code) });
        return writeError(res, header, e);
      }
      opts.metrics.controlPlaneCalls.inc({ procedure: procedureLabel(path), code: "ok" });
      const json = /json/.test(header.get("content-type") ?? "");
      return respond(res, 200, { "content-type": json ? "application/json" : "application/proto" }, json ? "{}" : "");
    }
    let name = procedureLabel(path);
    if (!labels.has(name)) {
      if (labels.size >= MAX_PROCEDURE_LABELS) name = "other";
      else labels.add(name);
    }
    opts.metrics.unimplementedProcedures.inc({ procedure: name });
    writeError(res, header, notServed(path.slice(1)));
  };
}

/** A Connect error as the client's protocol expects it: a unary JSON error, or a stream's end-stream frame. */
function writeError(res: NodeResponse, header: Headers, err: ConnectError): void {
  const ct = header.get("content-type") ?? "";
  if (ct.startsWith("application/connect+")) {
    return respond(res, 200, { "content-type": ct.split(";")[0] ?? ct }, endStreamFor(err));
  }
  respond(res, codeToHttpStatus(err.code), { "content-type": "application/json" }, errorToJsonBytes(err, {}));
}
