export { startGatewayService, type GatewayService, type GatewayServiceOptions } from "./service.js";
