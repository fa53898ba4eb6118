// Cursor-protocol test client: message builders, BidiAppend / RunSSE over HTTP/1.1, stream decoding and collection.
export * from "./messages.js";
export { cursorHeaders, type CursorIdentity } from "./headers.js";
export { parseConnectError, type ConnectErrorBody } from "./connect-error.js";
export { streamingTurn, type StreamingTurn } from "./streaming-turn.js";
export { holdIdleRunSse } from "./idle-stream.js";
export { fetchTransport, nodeHttpTransport, type HttpTransport, type PostResponse } from "./transport.js";
export { createFrameDecoder, StreamProtocolError, StreamTruncatedError, type FrameDecoder, type StreamItem } from "./frames.js";
export { BIDI_APPEND_PATH, encodeAppendBody, type AppendOptions, type AppendResult } from "./append.js";
export { collectItems, isHeartbeat, type CollectResult } from "./collect.js";
export {
  createCursorClient,
  ConnectHttpError,
  RUN_SSE_PATH,
  type CursorClient,
  type CursorClientOptions,
  type RunSseOptions,
  type RunSseResponse,
  type RunTurnOptions,
  type RunTurnResult,
  type TurnHandle,
} from "./client.js";
export {
  controlPlaneClients,
  exchangeApiKey,
  listModels,
  signInLikeCursor,
  type ControlPlaneClients,
  type ModelsList,
  type PreRunAnswers,
  type SignInResult,
} from "./control-plane.js";
export { runOverHttp2, type RunH2Options, type RunH2Result } from "./run-h2.js";
