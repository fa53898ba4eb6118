import { createMemoryBus } from "../src/index.js";
import { busContract } from "./contract.js";

busContract("memory", async (opts) => ({ bus: createMemoryBus(opts), cleanup: async () => {} }));
