export { startIngressService, type IngressService, type IngressServiceOptions } from "./service.js";
