export { startEmbeddedGateway, type EmbeddedGateway, type EmbeddedOptions } from "./service.js";
