/** What a run brings to pick and authenticate its upstream: the client's BYOK credentials and model parameters, the gateway's held keys. */

/** BYOK credentials a Cursor client sent with `RequestedModel` (mirrors its `credentials` oneof). Secret: never log. */
export type ClientCredentials =
  | { kind: "api_key"; apiKey: string; baseUrl?: string }
  | { kind: "azure"; apiKey: string; baseUrl: string; deployment: string; apiVersion?: string }
  | { kind: "bedrock"; accessKey: string; secretKey: string; region: string; sessionToken?: string };

/** A credential the gateway holds (config or the tenant's sealed keys), looked up by a route's `credentials.ref`. Secret: never log. */
export type GatewayCredential =
  | { kind: "api_key"; apiKey: string }
  | { kind: "aws"; accessKeyId: string; secretAccessKey: string; sessionToken?: string };

/** A `RequestedModel.parameters` entry: `{id, value}` as the client copied it from the advertised model list. */
export interface ModelParameter {
  id: string;
  value: string;
}
