/**
 * The small JSON Schema subset the built-in tools use, with builders and a validator over
 * the same definitions: what the model is shown is exactly what the gateway accepts.
 *
 * Guarantees of {@link validateArgs}:
 * - objects built with {@link obj} are strict: unknown properties are an error, every
 *   `required` property must be present;
 * - an optional property whose value is `null` is treated as absent and removed (models in
 *   "strict" structured-output mode send `null` for optionals);
 * - strings, integers, booleans, enums, arrays (with min/max items) and integer bounds are checked;
 * - the returned value is a fresh, cleaned copy; the input is never mutated.
 */
export type JsonSchema =
  | { type: "string"; description?: string; enum?: readonly string[]; minLength?: number }
  | { type: "integer"; description?: string; minimum?: number; maximum?: number }
  | { type: "boolean"; description?: string }
  | { type: "array"; description?: string; items: JsonSchema; minItems?: number; maxItems?: number }
  | ObjectSchema
  | FreeObjectSchema;

export type ObjectSchema = {
  type: "object";
  description?: string;
  properties: Record<string, JsonSchema>;
  required: readonly string[];
  additionalProperties: false;
};

/** An arbitrary JSON object (used for MCP tool arguments, whose schema the MCP server owns). */
export type FreeObjectSchema = { type: "object"; description?: string; additionalProperties: true };

type Described = { description?: string };

export const str = (description: string, extra: { enum?: readonly string[]; minLength?: number } = {}): JsonSchema => ({
  type: "string", description, ...extra,
});
export const int = (description: string, extra: { minimum?: number; maximum?: number } = {}): JsonSchema => ({
  type: "integer", description, ...extra,
});
export const bool = (description: string): JsonSchema => ({ type: "boolean", description });
export const arr = (description: string, items: JsonSchema, extra: { minItems?: number; maxItems?: number } = {}): JsonSchema => ({
  type: "array", description, items, ...extra,
});
export const freeObj = (description: string): FreeObjectSchema => ({ type: "object", description, additionalProperties: true });

/** A strict object: `required` lists the mandatory properties, everything else is optional. */
export function obj(properties: Record<string, JsonSchema>, required: readonly string[], extra: Described = {}): ObjectSchema {
  return { type: "object", ...extra, properties, required, additionalProperties: false };
}

export type Validated<T> = { ok: true; value: T } | { ok: false; error: string };

/**
 * Validates `value` against `schema`. `T` is the TypeScript shape the caller declared to mirror
 * the schema; the cast is sound as long as the schema and `T` agree (each tool keeps both side
 * by side in `specs.ts`).
 */
export function validateArgs<T>(schema: ObjectSchema, value: unknown): Validated<T> {
  const errors: string[] = [];
  const cleaned = check(schema, value, "", errors);
  if (errors.length > 0) return { ok: false, error: errors.slice(0, 5).join("; ") };
  return { ok: true, value: cleaned as T };
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function describeType(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  return typeof v;
}

function check(schema: JsonSchema, value: unknown, path: string, errors: string[]): unknown {
  const at = path || "arguments";
  switch (schema.type) {
    case "string":
      if (typeof value !== "string") {
        errors.push(`${at} must be a string, got ${describeType(value)}`);
        return value;
      }
      if (schema.enum && !schema.enum.includes(value)) errors.push(`${at} must be one of ${schema.enum.map((e) => JSON.stringify(e)).join(", ")}`);
      if (schema.minLength !== undefined && value.length < schema.minLength) errors.push(`${at} must not be empty`);
      return value;
    case "integer":
      if (typeof value !== "number" || !Number.isInteger(value)) {
        errors.push(`${at} must be an integer, got ${describeType(value)}`);
        return value;
      }
      if (schema.minimum !== undefined && value < schema.minimum) errors.push(`${at} must be >= ${schema.minimum}`);
      if (schema.maximum !== undefined && value > schema.maximum) errors.push(`${at} must be <= ${schema.maximum}`);
      return value;
    case "boolean":
      if (typeof value !== "boolean") errors.push(`${at} must be a boolean, got ${describeType(value)}`);
      return value;
    case "array": {
      if (!Array.isArray(value)) {
        errors.push(`${at} must be an array, got ${describeType(value)}`);
        return value;
      }
      if (schema.minItems !== undefined && value.length < schema.minItems) errors.push(`${at} must have at least ${schema.minItems} item(s)`);
      if (schema.maxItems !== undefined && value.length > schema.maxItems) errors.push(`${at} must have at most ${schema.maxItems} item(s)`);
      return value.map((item, i) => check(schema.items, item, `${at}[${i}]`, errors));
    }
    case "object": {
      if (!isPlainObject(value)) {
        errors.push(`${at} must be an object, got ${describeType(value)}`);
        return value;
      }
      if (schema.additionalProperties) return { ...value };
      const out: Record<string, unknown> = {};
      for (const [key, v] of Object.entries(value)) {
        const prop = schema.properties[key];
        const propPath = path ? `${path}.${key}` : key;
        if (!prop) {
          errors.push(`unknown property ${JSON.stringify(propPath)} (allowed: ${Object.keys(schema.properties).join(", ")})`);
          continue;
        }
        if (v === null && !schema.required.includes(key)) continue;
        out[key] = check(prop, v, propPath, errors);
      }
      for (const key of schema.required) {
        if (!(key in out)) {
          errors.push(`missing required property ${JSON.stringify(path ? `${path}.${key}` : key)}`);
        }
      }
      return out;
    }
  }
}
