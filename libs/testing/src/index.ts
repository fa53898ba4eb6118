export * from "./simulator/index.js";
