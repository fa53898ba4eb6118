export { startEmbeddedGateway, type EmbeddedGateway, type EmbeddedOptions } from "./app.js";
