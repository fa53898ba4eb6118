import { Redis } from "ioredis";
import { busContract } from "./contract.js";
import { REDIS_URL, deleteKeys, openBus, uniquePrefix } from "./redis-harness.js";

const prefix = uniquePrefix("contract");

busContract("redis", async (opts) => {
  const { bus } = openBus(prefix, opts);
  return {
    bus,
    async cleanup() {
      const admin = new Redis(REDIS_URL);
      try {
        await deleteKeys(admin, prefix);
      } finally {
        await admin.quit();
      }
    },
  };
});
