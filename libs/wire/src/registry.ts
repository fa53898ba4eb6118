import { createRegistry, type Registry } from "@bufbuild/protobuf";
import { file_agent_v1_agent } from "./gen/agent/v1/agent_pb.js";
import { file_aiserver_v1_aiserver } from "./gen/aiserver/v1/aiserver_pb.js";

/** Every generated type of the gateway's wire files, for JSON codecs and descriptor checks. */
export function createWireRegistry(): Registry {
  return createRegistry(file_agent_v1_agent, file_aiserver_v1_aiserver);
}
