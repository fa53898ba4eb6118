// Public surface of @byok/wire: generated agent.v1 / aiserver.v1 types plus the framing codecs
// both ends of the Cursor transport need (Connect envelopes, hex payloads, end-stream JSON).
export * from "./gen/agent/v1/agent_pb.js";
export {
  BidiAppendRequestSchema,
  type BidiAppendRequest,
  BidiAppendResponseSchema,
  type BidiAppendResponse,
  BidiService,
  ErrorDetailsSchema,
  type ErrorDetails,
  ErrorDetails_Error,
  CustomErrorDetailsSchema,
  type CustomErrorDetails,
  file_aiserver_v1_aiserver,
} from "./gen/aiserver/v1/aiserver_pb.js";
export { file_agent_v1_agent } from "./gen/agent/v1/agent_pb.js";
// The whole aiserver.v1 subset (control plane) under one name: several of its types share a
// name with their agent.v1 copies (RequestedModel, ModelDetails, BidiRequestId ...).
export * as aiserver from "./gen/aiserver/v1/aiserver_pb.js";
export * from "./envelope.js";
export * from "./hex.js";
export * from "./end-stream.js";
export * from "./registry.js";
