// Private redis-server processes for fault tests: the shared helpers of @byok/testing.
import { haveRedisServerBinary } from "@byok/testing";

export { freePort, killRedisServer, startRedisServer } from "@byok/testing";

export const haveRedisServer = await haveRedisServerBinary();
