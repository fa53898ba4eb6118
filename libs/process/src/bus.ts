import { createRedisBus, type Bus } from "@byok/bus";
import { busOptionsOf, redisTargetOf, type GatewayConfig } from "@byok/config";
import type { Logger } from "@byok/telemetry";

/** The Redis bus of a distributed process, its connections named `<name>:bus:…`. */
export function openRedisBus(config: GatewayConfig, name: string, logger: Logger): Bus {
  return createRedisBus({
    redis: redisTargetOf(config),
    keyPrefix: config.distributed.redisKeyPrefix,
    name: `${name}:bus`,
    options: busOptionsOf(config),
    onError: (err) => logger.warn({ err: err.message }, "redis bus"),
  });
}
